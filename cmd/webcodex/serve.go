package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
)

func newServeCmd(g *globals) *cobra.Command {
	var (
		projects  []string
		listen    string
		publicURL string
		oauth     bool
		logFormat string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP server",
		Long: "Run the WebCodex HTTP server on the data directory's embedded SQLite databases,\n" +
			"or, with --database, on a PostgreSQL database several replicas share.\n" +
			"Each --project DIR (or NAME=DIR) is registered as agent:local:<name>.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.secureServer(); err != nil {
				return err
			}
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			if listen != "" {
				cfg.Listen = listen
			}
			if publicURL != "" {
				cfg.PublicURL = publicURL
			}
			if oauth {
				cfg.OAuth.Enabled = true
			}
			log, err := newFormatLogger(cmd.ErrOrStderr(), cfg, logFormat)
			if err != nil {
				return err
			}
			return runServe(cmd.Context(), cfg, log, projects, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringArrayVar(&projects, "project", nil, "register a project directory, as DIR or NAME=DIR (repeatable)")
	cmd.Flags().StringVar(&listen, "listen", "", "listen address (default "+app.DefaultListen+")")
	cmd.Flags().StringVar(&publicURL, "public-url", "", "externally visible base URL (e.g. a tunnel's https URL): published in OpenAPI, and its host passes the DNS-rebinding check")
	cmd.Flags().StringVar(&logFormat, "log-format", logText, "server log format: text, or json (one JSON object per line, log/slog); lines of a request carry its request_id")
	cmd.Flags().BoolVar(&oauth, "oauth", false, "run the built-in OAuth authorization server, so hosted agents (ChatGPT, claude.ai) can connect ([oauth] enabled)")
	return cmd
}

func runServe(ctx context.Context, cfg app.Config, log *slog.Logger, projects []string, stdout io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	if _, err := a.RegisterProjects(ctx, projects); err != nil {
		return err
	}
	addr, err := a.Listen()
	if err != nil {
		return err
	}
	base := "http://" + addr.String()
	fprintf(stdout, "WebCodex %s listening on %s\n", app.Version, base)
	fprintf(stdout, "  tools     POST %s/api/tools/call   (list: POST %s/api/tools/list)\n", base, base)
	fprintf(stdout, "  mcp       %s/mcp   (Streamable HTTP; stdio: webcodex mcp)\n", base)
	fprintf(stdout, "  actions   POST %s/api/actions/{tool}\n", base)
	fprintf(stdout, "  openapi   %s/openapi.json\n", base)
	fprintf(stdout, "  health    %s/healthz\n", base)
	fprintf(stdout, "  console   %s/console/   (sign in with an API token)\n", base)
	fprintf(stdout, "  data      %s\n", cfg.DataDir)
	if a.Stores.Backend != app.BackendSQLite {
		fprintf(stdout, "  database  %s\n", a.Stores.Backend)
	}
	fprintf(stdout, "  sandbox   %s\n", a.Sandbox.Status())
	fprintf(stdout, "  contain   %s (%s)\n", a.Contain.Mechanism(), a.Contain.Detail())
	fprintf(stdout, "  evidence  journal %s, signing key %s (check offline: webcodex evidence verify)\n", a.Evidence.JournalID(), a.Evidence.KeyID())
	ps, err := a.Projects.List(ctx)
	if err != nil {
		return err
	}
	if len(ps) == 0 {
		fprintf(stdout, "No projects registered; restart with --project DIR or run `webcodex project add DIR`.\n")
	} else {
		fprintf(stdout, "Projects:\n")
		tw := table(stdout)
		for _, p := range ps {
			if p.Sandbox != "" {
				fmt.Fprintf(tw, "  %s\t%s\tsandbox %s\n", p.ID, p.Root, p.Sandbox)
			} else {
				fmt.Fprintf(tw, "  %s\t%s\n", p.ID, p.Root)
			}
		}
		tw.Flush()
	}
	tokenFile := filepath.Join(cfg.DataDir, app.AdminTokenFile)
	if a.AdminCreated {
		fprintf(stdout, "Admin token (shown once; also saved to %s, mode 0600):\n  %s\n", tokenFile, a.AdminToken)
	} else {
		fprintf(stdout, "Admin token: in %s (Authorization: Bearer <token>)\n", tokenFile)
	}
	fprintf(stdout, "Press Ctrl-C to stop.\n")
	releaseStartupMemory()
	start := time.Now()
	err = a.Serve(ctx)
	fprintf(stdout, "Stopped after %s.\n", time.Since(start).Round(time.Second))
	return err
}
