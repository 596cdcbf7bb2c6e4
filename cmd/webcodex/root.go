package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/requestid"
)

// globals are the flags every command shares.
type globals struct {
	dataDir string
	// database and evidenceKey, when set, override database_url and
	// evidence_key: every command then works on that PostgreSQL
	// deployment.
	database, evidenceKey string
	// getenv reads the environment the configuration is loaded from (nil:
	// os.Getenv); serve and mcp set it from secureServerProcess.
	getenv func(string) string
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "webcodex",
		Short:         "A runtime for AI coding agents, with verifiable Workflow Session ledgers",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       app.Version,
	}
	root.PersistentFlags().StringVar(&g.dataDir, "data-dir", "", "data directory (default $WEBCODEX_DATA, $XDG_DATA_HOME/webcodex or ~/.local/share/webcodex)")
	root.PersistentFlags().StringVar(&g.database, "database", "", "keep every store in this PostgreSQL database (postgres://user@host/db; put the password in ~/.pgpass or PGPASSWORD) instead of the data directory's SQLite files, so several replicas can serve it (database_url)")
	root.PersistentFlags().StringVar(&g.evidenceKey, "evidence-key", "", "with --database: the evidence signing key file every replica is given (default: the data directory's evidence.key; evidence_key)")
	root.AddCommand(newServeCmd(g), newMCPCmd(g), newTokenCmd(g), newOAuthCmd(g), newShareCmd(g), newProjectCmd(g), newSessionCmd(g), newAuditCmd(g), newEvidenceCmd(g), newAttentionCmd(g), newMemoryCmd(g))
	root.AddCommand(newGoalCmd(g), newRunnerCmd(g), newMigrateCmd(g), newGCCmd(g), newStatusCmd(g))
	return root
}

// loadConfig loads the configuration for the data directory in g, with
// the deployment flags over it.
func (g *globals) loadConfig() (app.Config, error) {
	getenv := g.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg, err := app.LoadConfig(g.dataDir, getenv)
	if err != nil || (g.database == "" && g.evidenceKey == "") {
		return cfg, err
	}
	if g.database != "" {
		cfg.DatabaseURL = g.database
	}
	if g.evidenceKey != "" {
		cfg.EvidenceKey = g.evidenceKey
	}
	return cfg, cfg.Validate()
}

// secureProcess is secureServerProcess. The package's tests that run serve
// inside the test binary replace it, since its re-execution would replace
// the whole test process; the child processes they start keep the real one.
var secureProcess = secureServerProcess

// secureServer makes this serve or mcp process non-dumpable and free of
// credentials in its environment (secureServerProcess), before the
// configuration is loaded.
func (g *globals) secureServer() error {
	getenv, err := secureProcess()
	if err != nil {
		return err
	}
	g.getenv = getenv
	return nil
}

// openStores opens the deployment's stores for an offline command.
func (g *globals) openStores(ctx context.Context) (*app.Stores, app.Config, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, cfg, err
	}
	st, err := app.OpenStores(ctx, cfg)
	return st, cfg, err
}

// Log formats of serve's --log-format.
const (
	logText = "text"
	logJSON = "json"
)

// newLogger is the text logger of cfg's level.
func newLogger(w io.Writer, cfg app.Config) *slog.Logger {
	log, _ := newFormatLogger(w, cfg, logText)
	return log
}

// newFormatLogger is the logger of cfg's level in format (logText or
// logJSON; anything else is refused). A line logged with a request's
// context carries its request id (requestid.Handler).
func newFormatLogger(w io.Writer, cfg app.Config, format string) (*slog.Logger, error) {
	level, _ := cfg.SlogLevel()
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case logText:
		return slog.New(requestid.NewHandler(slog.NewTextHandler(w, opts))), nil
	case logJSON:
		return slog.New(requestid.NewHandler(slog.NewJSONHandler(w, opts))), nil
	}
	return nil, failure.New(failure.InvalidArguments, "--log-format %q is not json or text", format)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeJSONFile writes v as indented JSON to path (0600), or to w when path
// is "" or "-".
func writeJSONFile(w io.Writer, path string, v any) error {
	if path == "" || path == "-" {
		return writeJSON(w, v)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := writeJSON(f, v); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

func fprintf(w io.Writer, format string, args ...any) { fmt.Fprintf(w, format, args...) }
