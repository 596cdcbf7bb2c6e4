package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/workflow"
)

// newSessionMessagesCmd is `webcodex session messages ID`: the session's
// board, newest first, read offline from the data directory like the
// other session commands (the same read list_session_messages makes).
func newSessionMessagesCmd(g *globals) *cobra.Command {
	var (
		asJSON       bool
		limit        int
		kind, status string
	)
	cmd := &cobra.Command{
		Use:   "messages ID",
		Short: "List a session's board messages, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := workflow.ParseSessionID(args[0])
			if err != nil {
				return err
			}
			st, _, err := g.openStores(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			board := workflow.NewBoard(st.Workflow, nil)
			ms, more, err := board.List(cmd.Context(), id, workflow.MessageFilter{
				Kind: workflow.MessageKind(kind), Status: workflow.MessageStatus(status), Limit: limit})
			if err != nil {
				return err
			}
			return printMessages(cmd.OutOrStdout(), id, ms, more, asJSON, time.Now())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&limit, "limit", workflow.MessageListDefault, fmt.Sprintf("most messages to list (max %d)", workflow.MessageListMax))
	cmd.Flags().StringVar(&kind, "kind", "", "only messages of this kind")
	cmd.Flags().StringVar(&status, "status", "", "open or resolved")
	return cmd
}

// messageTextChars bounds the text column of the messages table.
const messageTextChars = 60

func printMessages(w io.Writer, id string, ms []workflow.Message, more, asJSON bool, now time.Time) error {
	if ms == nil {
		ms = []workflow.Message{}
	}
	if asJSON {
		return writeJSON(w, map[string]any{"session_id": id, "messages": ms, "has_more": more})
	}
	if len(ms) == 0 {
		fprintf(w, "No messages.\n")
		return nil
	}
	tw := table(w)
	fmt.Fprintln(tw, "KIND\tSTATUS\tPRIORITY\tID\tAGE\tMESSAGE")
	for _, m := range ms {
		st := string(m.Status)
		if m.RequiresAck && m.Status == workflow.MessageOpen {
			st += " (ack)"
		}
		text, _, _ := strings.Cut(m.Body, "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Kind, st, m.Priority, m.ID, age(now.Sub(m.CreatedAt)), clip(text, messageTextChars))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more {
		fprintf(w, "(newest %d shown; more match)\n", len(ms))
	}
	return nil
}

// age renders d in its largest whole unit: 45s, 12m, 3h, 5d.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d/time.Second)))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
