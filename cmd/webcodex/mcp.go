package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
)

func newMCPCmd(g *globals) *cobra.Command {
	var projects []string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve MCP on standard input and output",
		Long: "Serve MCP (2026-07-28 and 2025-11-25 clients) on stdin/stdout as the local user, for clients that\n" +
			"start their servers as child processes, one JSON-RPC message per line (at most 4 MiB). Logs go to stderr.\n" +
			"A line that is not JSON gets a parse error and a longer line an error; the session goes on. At end of\n" +
			"input the server answers every request it has read, then exits.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.secureServer(); err != nil {
				return err
			}
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			return runMCP(cmd.Context(), cfg, projects, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringArrayVar(&projects, "project", nil, "register a project directory, as DIR or NAME=DIR (repeatable)")
	return cmd
}

func runMCP(ctx context.Context, cfg app.Config, projects []string, stderr io.Writer) error {
	log := newLogger(stderr, cfg)
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	if _, err := a.RegisterProjects(ctx, projects); err != nil {
		return err
	}
	srv := a.MCP()
	log.Info("serving MCP on stdio", "data", cfg.DataDir)
	releaseStartupMemory()
	err = srv.ServeStdio(ctx)
	a.Kernel.Drain(context.Background())
	return err
}
