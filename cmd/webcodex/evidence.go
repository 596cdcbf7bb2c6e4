package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// newEvidenceCmd is `webcodex evidence`: offline verification, export and
// inspection of the tamper-evident invocation journal (evidence.db).
func newEvidenceCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "evidence", Short: "Verify, export and inspect the tamper-evident invocation journal"}
	cmd.AddCommand(newEvidenceVerifyCmd(g), newEvidenceExportCmd(g), newEvidenceVerifyBundleCmd(), newEvidenceCheckpointCmd(g),
		newEvidenceListCmd(g), newEvidenceRotateKeyCmd(g))
	return cmd
}

// newEvidenceVerifyCmd is `webcodex evidence verify`: the offline
// verification of the whole journal.
func newEvidenceVerifyCmd(g *globals) *cobra.Command {
	var (
		fromFile string
		asJSON   bool
		keys     []string
		progress bool
	)
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Verify the journal offline; exits non-zero on any finding",
		Long: "Recomputes every leaf from the stored canonical bytes and columns, rebuilds the Merkle tree, checks every\n" +
			"stored checkpoint's signature and root and, with --from, a consistency proof from a checkpoint you kept.\n" +
			"Opens evidence.db read-only; a running server may keep appending.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			opts := evidence.VerifyOptions{TrustedKeys: keys}
			if fromFile != "" {
				if opts.From, err = os.ReadFile(fromFile); err != nil {
					return err
				}
			}
			errw := cmd.ErrOrStderr()
			if progress || isTerminal(errw) {
				var bar *progressbar.ProgressBar
				opts.Progress = func(done, total uint64) {
					if bar == nil {
						bar = progressbar.NewOptions64(int64(total), progressbar.OptionSetWriter(errw),
							progressbar.OptionSetDescription("verifying records"), progressbar.OptionShowCount(),
							progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetPredictTime(true),
							progressbar.OptionOnCompletion(func() { fmt.Fprintln(errw) }))
					}
					bar.Set64(int64(done))
				}
			}
			rep, err := app.VerifyJournal(cmd.Context(), cfg, opts)
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else {
				printReport(cmd.OutOrStdout(), rep)
			}
			return reportErr(rep)
		},
	}
	verify.Flags().StringVar(&fromFile, "from", "", "a signed checkpoint you kept earlier (`webcodex evidence checkpoint` output); the journal must extend it")
	verify.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	verify.Flags().StringArrayVar(&keys, "key", nil, "trust only this public key (note verifier key; repeatable) instead of the data directory's "+evidence.PublicKeysFile)
	verify.Flags().BoolVar(&progress, "progress", false, "print progress to standard error even when it is not a terminal")
	return verify
}

// newEvidenceExportCmd is `webcodex evidence export`: one session's
// self-contained evidence bundle.
func newEvidenceExportCmd(g *globals) *cobra.Command {
	var session, out string
	export := &cobra.Command{
		Use:   "export --session ID",
		Short: "Write a self-contained evidence bundle (records, inclusion proofs, checkpoint, public keys) for one session",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if session == "" {
				return fmt.Errorf("--session is required")
			}
			return withJournal(cmd, g, func(j journal) error {
				b, err := j.ExportBundle(cmd.Context(), session)
				if err != nil {
					return err
				}
				return writeJSONFile(cmd.OutOrStdout(), out, b)
			})
		},
	}
	export.Flags().StringVar(&session, "session", "", "the session id (claimed or verified)")
	export.Flags().StringVarP(&out, "output", "o", "", "write to FILE instead of standard output")
	return export
}

// newEvidenceVerifyBundleCmd is `webcodex evidence verify-bundle`: a
// bundle verified with no database.
func newEvidenceVerifyBundleCmd() *cobra.Command {
	var bundleJSON bool
	var bundleKeys []string
	verifyBundle := &cobra.Command{
		Use:   "verify-bundle FILE",
		Short: "Verify an evidence bundle with no database; exits non-zero on any finding",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			rep, err := evidence.VerifyBundleWith(b, bundleKeys)
			if err != nil {
				return err
			}
			if bundleJSON {
				if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else {
				printReport(cmd.OutOrStdout(), rep)
			}
			return reportErr(rep)
		},
	}
	verifyBundle.Flags().BoolVar(&bundleJSON, "json", false, "print the report as JSON")
	verifyBundle.Flags().StringArrayVar(&bundleKeys, "key", nil, "trust only this public key instead of the keys the bundle carries (repeatable)")
	return verifyBundle
}

// newEvidenceCheckpointCmd is `webcodex evidence checkpoint`: sign and
// print the journal head.
func newEvidenceCheckpointCmd(g *globals) *cobra.Command {
	checkpoint := &cobra.Command{
		Use:   "checkpoint",
		Short: "Sign the journal head (if it grew) and print the signed checkpoint; keep it to verify with --from later",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withJournal(cmd, g, func(j journal) error {
				cp, err := j.Checkpoint(cmd.Context())
				if err != nil {
					return err
				}
				_, err = io.WriteString(cmd.OutOrStdout(), cp.Note)
				return err
			})
		},
	}
	return checkpoint
}

// newEvidenceListCmd is `webcodex evidence list`: a session's records and
// binding counts.
func newEvidenceListCmd(g *globals) *cobra.Command {
	var (
		listSession string
		listLimit   int
		listJSON    bool
	)
	list := &cobra.Command{
		Use:   "list --session ID",
		Short: "List a session's evidence records (claimed or verified), newest first, with binding counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listSession == "" {
				return fmt.Errorf("--session is required")
			}
			return withJournal(cmd, g, func(j journal) error {
				es, err := j.SessionRecords(cmd.Context(), listSession, listLimit)
				if err != nil {
					return err
				}
				counts, err := j.SessionCounts(cmd.Context(), listSession)
				if err != nil {
					return err
				}
				return printEntries(cmd.OutOrStdout(), es, counts, listJSON)
			})
		},
	}
	list.Flags().StringVar(&listSession, "session", "", "the session id (claimed or verified)")
	list.Flags().IntVar(&listLimit, "limit", evidence.DefaultSessionRecords, fmt.Sprintf("most records to list (max %d)", evidence.MaxSessionRecords))
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON")
	return list
}

// newEvidenceRotateKeyCmd is `webcodex evidence rotate-key`: replace the
// signing key, keeping the retired public key.
func newEvidenceRotateKeyCmd(g *globals) *cobra.Command {
	rotate := &cobra.Command{
		Use:   "rotate-key",
		Short: "Replace the signing key, keeping the retired public key in " + evidence.PublicKeysFile + "; run with the server stopped",
		Long: "Verifies the journal, signs its head with the current key and then with a new key, and replaces\n" +
			evidence.KeyFile + " atomically (mode 0600). The retired public key stays in " + evidence.PublicKeysFile + ", so older\n" +
			"checkpoints keep verifying, and the retired private key is kept as " + evidence.RetiredKeyFile("<id>") + ".\n" +
			"Refused while another process (a running `webcodex serve` or `webcodex mcp`) has the journal open,\n" +
			"and for a journal that does not verify.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			r, err := app.RotateJournalKey(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fprintf(w, "Evidence signing key rotated.\n")
			fprintf(w, "  old key     %s (retired: public key kept in %s, private key in %s)\n", r.OldKeyID, evidence.PublicKeysFile, r.RetiredKeyFile)
			fprintf(w, "  new key     %s\n", r.NewKeyID)
			if r.OldCheckpoint != nil {
				fprintf(w, "  checkpoint  size %d signed with the old key\n", r.OldCheckpoint.Size)
			}
			if r.NewCheckpoint != nil {
				fprintf(w, "  checkpoint  size %d signed with the new key\n", r.NewCheckpoint.Size)
			}
			return nil
		},
	}
	return rotate
}

// journal is the evidence journal as the offline evidence commands use it.
type journal interface {
	ExportBundle(ctx context.Context, sessionID string) (evidence.Bundle, error)
	Checkpoint(ctx context.Context) (evidence.SignedCheckpoint, error)
	SessionRecords(ctx context.Context, sessionID string, limit int) ([]evidence.Entry, error)
	SessionCounts(ctx context.Context, sessionID string) (evidence.Counts, error)
	Close() error
}

// withJournal opens the data directory's evidence journal (openJournal)
// for fn and closes it after.
func withJournal(cmd *cobra.Command, g *globals, fn func(journal) error) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	j, err := openJournal(cmd.Context(), cmd.ErrOrStderr(), cfg)
	if err != nil {
		return err
	}
	defer j.Close()
	return fn(j)
}

// openJournal opens the deployment's journal for an offline command
// (app.OpenJournal: the ledger's pending outbox journaled first), and
// tells errw of each pending record the journal refused.
func openJournal(ctx context.Context, errw io.Writer, cfg app.Config) (journal, error) {
	j, skipped, err := app.OpenJournal(ctx, cfg)
	if err != nil {
		return nil, err
	}
	for _, e := range skipped {
		fprintf(errw, "warning: an evidence record from the workflow ledger's outbox was not journaled: %v\n", e)
	}
	return j, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// maxPrintedRanges bounds the purged ranges printReport lists; the JSON
// report has them all (up to evidence.MaxReportFindings).
const maxPrintedRanges = 8

// purgedRanges renders rep's purged index ranges, at most maxPrintedRanges.
func purgedRanges(rep evidence.Report) string {
	var parts []string
	for i, r := range rep.PurgedRanges {
		if i == maxPrintedRanges {
			parts = append(parts, fmt.Sprintf("… (%d ranges in all; --json lists them)", len(rep.PurgedRanges)))
			break
		}
		parts = append(parts, fmt.Sprintf("%d..%d", r.First, r.Last))
	}
	if rep.PurgedRangesTruncated {
		parts = append(parts, "(more ranges not listed)")
	}
	return strings.Join(parts, ", ")
}

// reportErr is the command's error for a report with findings (exit 1).
func reportErr(rep evidence.Report) error {
	if rep.Clean {
		return nil
	}
	var n int64
	for _, v := range rep.Totals {
		n += v
	}
	return fmt.Errorf("evidence verification failed: %d finding(s): %v", n, rep.Kinds())
}

func printReport(w io.Writer, rep evidence.Report) {
	status := "OK"
	if !rep.Clean {
		status = "FAILED"
	}
	fprintf(w, "Evidence verification: %s\n", status)
	fprintf(w, "  journal     %s (%s)\n", rep.JournalID, rep.Origin)
	fprintf(w, "  records     %d read, %d ok, %d unparseable\n", rep.Records, rep.OK, rep.Unparseable)
	if rep.FirstIndex != nil {
		fprintf(w, "  indexes     %d..%d\n", *rep.FirstIndex, *rep.LastIndex)
	}
	fprintf(w, "  head        size %d\n", rep.Head.Size)
	if rep.LastCheckpoint != nil {
		fprintf(w, "  checkpoint  size %d, key %s (%d checked); %d record(s) after it, not yet signed\n",
			rep.LastCheckpoint.Size, rep.LastCheckpoint.KeyID, rep.Checkpoints, rep.Unanchored)
	} else {
		fprintf(w, "  checkpoint  none verified (%d checked)\n", rep.Checkpoints)
	}
	if rep.From != nil {
		fprintf(w, "  --from      size %d: consistent\n", rep.From.Size)
	}
	fprintf(w, "  keys        %s\n", strings.Join(rep.TrustedKeys, ", "))
	if rep.Purged > 0 {
		fprintf(w, "  purged      %d record(s) whose payload retention dropped (leaf hashes kept and proven by the tree): %s\n",
			rep.Purged, purgedRanges(rep))
	}
	if rep.OutboxPending > 0 {
		fprintf(w, "  pending     %d record(s) of acknowledged calls wait in %s's evidence outbox; the next server start journals them\n",
			rep.OutboxPending, app.WorkflowDB)
	}
	if rep.Clean {
		return
	}
	tw := table(w)
	fmt.Fprintln(tw, "SCOPE\tKIND\tINDEX\tINVOCATION\tDETAIL")
	for _, f := range rep.Findings {
		i := "-"
		if f.Index != nil {
			i = fmt.Sprint(*f.Index)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Scope, f.Kind, i, f.InvocationID, f.Detail)
	}
	tw.Flush()
	if rep.FindingsTruncated {
		fprintf(w, "(findings list truncated at %d; totals: %v)\n", evidence.MaxReportFindings, rep.Totals)
	}
}

func printEntries(w io.Writer, es []evidence.Entry, c evidence.Counts, asJSON bool) error {
	if asJSON {
		return writeJSON(w, map[string]any{"records": es, "counts": c, "proves": handoff.EvidenceProves})
	}
	fprintf(w, "verified %d, sessionless %d, invalid_claim %d, unknown %d; replays %d\n", c.Verified, c.Sessionless, c.InvalidClaim, c.Unknown, c.Replays)
	fprintf(w, "(%s)\n", handoff.EvidenceProves)
	if len(es) == 0 {
		fprintf(w, "No records.\n")
		return nil
	}
	tw := table(w)
	fmt.Fprintln(tw, "INDEX\tAT\tTOOL\tSOURCE\tBINDING\tREASONS\tOUTCOME\tINVOCATION")
	for _, e := range es {
		r := e.Record
		if e.Purged {
			fmt.Fprintf(tw, "%d\t-\t-\t-\t-\t-\tpurged (payload dropped by retention)\t%s\n", e.Index, r.InvocationID)
			continue
		}
		reasons := make([]string, len(r.Reasons))
		for i, x := range r.Reasons {
			reasons[i] = string(x)
		}
		outcome := string(r.Outcome)
		if r.Replayed {
			outcome += ", replay of " + r.ReplayOf
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Index, r.At.Local().Format("2006-01-02 15:04:05"), r.Tool, r.Source,
			r.Binding, strings.Join(reasons, ","), outcome, r.InvocationID)
	}
	return tw.Flush()
}
