package main

import (
	"errors"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
)

// errAttention is returned when something needs attention: main exits
// with ExitAttention and prints nothing more.
var errAttention = errors.New("something needs attention")

// ExitAttention is the exit status of `webcodex attention` when something
// is waiting (0: nothing; 1: an error).
const ExitAttention = 3

func newAttentionCmd(g *globals) *cobra.Command {
	var sessionID, windowKey string
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "attention",
		Short: "Print what is waiting for you (for agent harness hooks)",
		Long: "Print, for the credential in $WEBCODEX_TOKEN (the local user without one; judged as the server judges it), the session's " +
			"unresolved ACK-required messages and open todos (--session) and the peer messages retained for " +
			"your window (--window, the host window id your MCP client sends with that same credential). " +
			"Exit status 3 when something is waiting, 0 when nothing is, 1 on error. Nothing is marked read.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sessionID == "" && windowKey == "" {
				return errors.New("give --session, --window or both")
			}
			ctx := cmd.Context()
			st, cfg, err := g.openStores(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			getenv := g.getenv
			if getenv == nil {
				getenv = os.Getenv
			}
			p, err := app.AttentionPrincipal(ctx, st, cfg, getenv("WEBCODEX_TOKEN"))
			if err != nil {
				return err
			}
			att, err := app.CheckAttention(ctx, st, p, sessionID, windowKey)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(w, att); err != nil {
					return err
				}
			} else if att.Needed || !quiet {
				printAttention(w, att)
			}
			if att.Needed {
				return errAttention
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&sessionID, "session", "", "Workflow Session id (wc_sess_…)")
	cmd.Flags().StringVar(&windowKey, "window", "", "host window id, as your MCP client sends it")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "print nothing when nothing is waiting (for hooks that run on every prompt)")
	return cmd
}

func printAttention(w io.Writer, a app.Attention) {
	if !a.Needed {
		fprintf(w, "Nothing is waiting.\n")
		return
	}
	for _, m := range a.AckRequired {
		fprintf(w, "ACK required %s [%s, %s]: %s\n  (echo its id in ack_session_message_ids of your next call on session %s)\n",
			m.ID, m.Kind, m.Priority, oneLine(m.Body), a.SessionID)
	}
	for _, m := range a.OpenTodos {
		fprintf(w, "Open todo %s [%s]: %s\n", m.ID, m.Priority, oneLine(m.Body))
	}
	if a.SessionMore {
		fprintf(w, "(more open session messages: list_session_messages shows them all)\n")
	}
	for _, m := range a.PeerMessages {
		ack := ""
		if m.RequiresAck {
			ack = ", ACK required"
		}
		fprintf(w, "Peer message %s from %s [%s%s]: %s\n", m.ID, m.FromPeer, m.Priority, ack, oneLine(m.Body))
	}
}

// oneLine is s on one line, cut to 240 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 240 {
		s = string(r[:240]) + "…"
	}
	return s
}
