package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
)

// newMigrateCmd is `webcodex migrate`: a data directory's stores copied
// into an empty PostgreSQL database, verified table by table.
func newMigrateCmd(g *globals) *cobra.Command {
	var from, to string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "migrate --from DATA_DIR --to postgres://…",
		Short: "Copy a data directory's stores into an empty PostgreSQL database, verified by count and digest",
		Long: "Copy every store of a data directory into an empty PostgreSQL database, in one transaction,\n" +
			"and verify each table by its row count and a digest of its rows on both sides. Stop the\n" +
			"server first; a database that already holds rows is refused and left as it was.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" {
				from = g.dataDir
			}
			if from == "" || to == "" {
				return errors.New("migrate needs --from DATA_DIR and --to postgres://…")
			}
			res, err := app.Migrate(cmd.Context(), from, to)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, map[string]any{"tables": res})
			}
			tw := table(w)
			fmt.Fprintln(tw, "TABLE\tROWS\tDIGEST")
			var rows int64
			for _, r := range res {
				fmt.Fprintf(tw, "%s\t%d\t%s\n", r.Table, r.Rows, r.Digest[:16])
				rows += r.Rows
			}
			tw.Flush()
			fprintf(w, "Copied and verified %d rows in %d tables. Serve them with `webcodex serve --database URL`.\n", rows, len(res))
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the data directory to copy (default: --data-dir)")
	cmd.Flags().StringVar(&to, "to", "", "the empty PostgreSQL database to copy into (a postgres:// URL)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the copied tables as JSON")
	return cmd
}
