package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/runneragent"
	"github.com/webcodex/webcodex/internal/runnerlink"
	"github.com/webcodex/webcodex/internal/tools/runners"
	"github.com/webcodex/webcodex/internal/transport/restclient"
)

// RunnerTokenEnv is where `webcodex runner` reads its token when --token is
// not given (so that it need not appear in the process list).
const RunnerTokenEnv = "WEBCODEX_RUNNER_TOKEN"

func newRunnerCmd(g *globals) *cobra.Command {
	var servers []string
	var token, config, transport string
	cmd := &cobra.Command{
		Use:   "runner --server URL [--server URL]... --config runner.toml",
		Short: "Serve this machine's projects to a WebCodex server (connects out; opens no port)",
		Long: "Connect out to the server, announce the projects of runner.toml as agent:<client_id>:<name> and serve " +
			"the server's requests on them until interrupted. When several replicas serve one database, give each " +
			"replica's own address with one --server each: the runner keeps a connection to every one. Reconnects with jittered backoff; stops on an " +
			"authentication failure. The token is --token or $" + RunnerTokenEnv + " (a wc_runner_ token from " +
			"`webcodex runner token create` on the server). See docs/runners.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(servers) == 0 || config == "" {
				return errors.New("give --server and --config")
			}
			for i, u := range servers {
				if slices.Contains(servers[:i], u) {
					return fmt.Errorf("--server %s is given twice: give each replica once", u)
				}
			}
			if token == "" {
				token = os.Getenv(RunnerTokenEnv)
			}
			if token == "" {
				return errors.New("give --token or set " + RunnerTokenEnv)
			}
			tr, err := runnerlink.ParseTransport(transport)
			if err != nil {
				return err
			}
			cfg, err := runneragent.LoadConfig(config)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			a := app.NewRunnerAgent(cfg, servers, token, tr, log)
			fprintf(cmd.OutOrStdout(), "webcodex runner %s: %d projects, sandbox %s, connecting to %s over %s\n",
				cfg.ClientID, len(cfg.Projects), a.Sandbox(), strings.Join(servers, ", "), tr)
			return a.Run(cmd.Context())
		},
	}
	cmd.Flags().StringArrayVar(&servers, "server", nil, "the server's base URL (http://host:port or https://...); repeat it for each replica of one deployment")
	cmd.Flags().StringVar(&token, "token", "", "the runner token (default $"+RunnerTokenEnv+")")
	cmd.Flags().StringVar(&config, "config", "", "runner.toml: client_id, [projects], [policy], [ssh.resources.NAME]")
	cmd.Flags().StringVar(&transport, "transport", string(runnerlink.Auto),
		"auto (a WebSocket, falling back to long-poll HTTP when a proxy refuses the upgrade), websocket or longpoll")
	cmd.AddCommand(newRunnerTokenCmd(g), newRunnerListCmd())
	return cmd
}

func newRunnerTokenCmd(g *globals) *cobra.Command {
	var clientID, owner string
	var asJSON bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a runner token (printed once); run on the server's machine",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAuth(cmd.Context(), g, func(svc *auth.Service) error {
				raw, tok, err := svc.CreateRunnerToken(cmd.Context(), clientID, owner)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), map[string]any{"token": raw, "record": tok})
				}
				fprintf(cmd.OutOrStdout(), "Created %s for runner %s (owner %s). It authenticates only the runner channel.\nToken (shown once):\n  %s\n",
					tok.ID, tok.Runner, tok.Owner, raw)
				return nil
			})
		},
	}
	create.Flags().StringVar(&clientID, "client-id", "", "the runner's client_id (as in its runner.toml; required)")
	create.Flags().StringVar(&owner, "owner", auth.DefaultOwner, "authority group whose principals see the runner's projects")
	create.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	create.MarkFlagRequired("client-id")
	cmd := &cobra.Command{Use: "token", Short: "Create runner tokens (revoke with `webcodex token revoke`)"}
	cmd.AddCommand(create)
	return cmd
}

func newRunnerListCmd() *cobra.Command {
	var server string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the runners of your authority group on a running server ($WEBCODEX_TOKEN)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := &restclient.Client{Base: server, Token: os.Getenv("WEBCODEX_TOKEN")}
			var out runners.ListOutput
			if err := c.Call(cmd.Context(), "list_runners", map[string]any{}, &out); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			return printRunners(cmd.OutOrStdout(), out.Runners, time.Now())
		},
	}
	cmd.Flags().StringVar(&server, "server", "http://"+app.DefaultListen, "the server's base URL")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printRunners(w io.Writer, rs []runners.Runner, now time.Time) error {
	if len(rs) == 0 {
		fprintf(w, "No runners.\n")
		return nil
	}
	tw := table(w)
	fmt.Fprintln(tw, "CLIENT ID\tOWNER\tCONNECTED\tLAST SEEN\tVERSION\tSANDBOX\tPROJECTS\tACTIVE")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s ago\t%s\t%s\t%d\t%d\n", r.ClientID, r.Owner, r.Connected,
			now.Sub(r.LastSeen).Round(time.Second), r.Version, r.Sandbox, len(r.Projects), r.ActiveProcesses)
	}
	return tw.Flush()
}
