package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/retention"
)

// newGCCmd is `webcodex gc`: one purge pass of the [retention] policy, or
// with --dry-run what it would remove.
func newGCCmd(g *globals) *cobra.Command {
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "gc [--dry-run]",
		Short: "Purge what the [retention] policy of config.toml says is old enough (--dry-run: only show it)",
		Long: "Run one pass of the retention policy ([retention] in config.toml; decision 0087): closed\n" +
			"sessions' events, Action Audit events, job output, evidence payloads, in short batches. With --dry-run, print what it would\n" +
			"remove, per store and policy, and remove nothing. The pass takes the same database locks as\n" +
			"the server's writes, so it may run while the server serves the data directory.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, cfg, err := g.openStores(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			w := cmd.OutOrStdout()
			// The evidence journal is opened only for its policy, and
			// never created: a data directory without one has nothing
			// to purge there.
			var ev app.EvidencePurger
			if cfg.Retention.EvidencePayloadDays != nil && app.HasJournal(cfg) {
				j, _, err := app.OpenJournal(ctx, cfg)
				if err != nil {
					return err
				}
				defer j.Close()
				ev = j
			}
			p := app.NewPurger(cfg, st, ev, newLogger(cmd.ErrOrStderr(), cfg))
			if dryRun {
				plan, err := p.Plan(ctx)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(w, map[string]any{"dry_run": true, "plan": plan})
				}
				printPlan(w, plan)
				return nil
			}
			runs := p.Pass(ctx)
			if asJSON {
				return writeJSON(w, map[string]any{"runs": runs})
			}
			return printRuns(w, runs)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what the policy would remove; remove nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printPlan(w io.Writer, plan []retention.Plan) {
	if len(plan) == 0 {
		fprintf(w, "No [retention] policy is set for these stores: nothing would be removed.\n")
	} else {
		tw := table(w)
		fmt.Fprintln(tw, "STORE\tPOLICY\tOLDER THAN\tWOULD REMOVE\tFROM\tLEFT TO OTHERS")
		for _, p := range plan {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", p.Store, p.Policy, p.Cutoff.UTC().Format(time.RFC3339), p.Pending.Items, p.Pending.Owners, p.Pending.Skipped)
		}
		tw.Flush()
		fprintf(w, "Dry run: nothing was removed.\n")
	}
}

func printRuns(w io.Writer, runs []retention.Run) error {
	if len(runs) == 0 {
		fprintf(w, "No [retention] policy is set for these stores: nothing removed.\n")
		return nil
	}
	tw := table(w)
	fmt.Fprintln(tw, "STORE\tPOLICY\tOLDER THAN\tREMOVED\tFROM\tLEFT TO OTHERS\tBATCHES\tERROR")
	var failed error
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", r.Store, r.Policy, r.Cutoff.UTC().Format(time.RFC3339), r.Removed.Items, r.Removed.Owners, r.Removed.Skipped, r.Batches, r.Error)
		if r.Error != "" && failed == nil {
			failed = fmt.Errorf("gc: the %s purge stopped: %s (what it removed before is committed; run gc again)", r.Store, r.Error)
		}
	}
	tw.Flush()
	return failed
}

// newStatusCmd is `webcodex status`: the deployment's backend and policy
// and, with --disk, each store's size in the data directory.
func newStatusCmd(g *globals) *cobra.Command {
	var disk, asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--disk]",
		Short: "Show the data directory's backend and retention policy (--disk: each store's size)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			var sizes []app.StoreSize
			if disk {
				if sizes, err = app.DiskUsage(cfg.DataDir); err != nil {
					return err
				}
			}
			backend := app.BackendSQLite
			if cfg.DatabaseURL != "" {
				backend = "postgresql"
			}
			if asJSON {
				return writeJSON(w, map[string]any{"data_dir": cfg.DataDir, "backend": backend, "retention": app.RetentionPolicies(cfg), "disk": sizes})
			}
			fprintf(w, "Data directory  %s\nBackend         %s\n", cfg.DataDir, backend)
			fprintf(w, "Retention       %s\n", policyLine(app.RetentionPolicies(cfg)))
			if !disk {
				return nil
			}
			if cfg.DatabaseURL != "" {
				fprintf(w, "The stores' rows are in PostgreSQL; below are the data directory's files only.\n")
			}
			tw := table(w)
			fmt.Fprintln(tw, "STORE\tSIZE\tBYTES\tFILES")
			var total int64
			for _, s := range sizes {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", s.Store, humanBytes(s.Bytes), s.Bytes, s.Files)
				total += s.Bytes
			}
			fmt.Fprintf(tw, "total\t%s\t%d\t\n", humanBytes(total), total)
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&disk, "disk", false, "print each store's size in the data directory")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func policyLine(ps []string) string {
	if len(ps) == 0 {
		return "none (everything is kept)"
	}
	return fmt.Sprint(ps)
}

// humanBytes is n in B, KiB, MiB or GiB, one decimal.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 2 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", v, [...]string{"KiB", "MiB", "GiB"}[i])
}
