package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/tools/closeout"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// newSessionCmd is `webcodex session`: inspect, export and import
// Workflow Sessions, and their message boards.
func newSessionCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "session", Short: "Inspect, export and import Workflow Sessions"}
	cmd.AddCommand(newSessionListCmd(g), newSessionShowCmd(g), newSessionExportCmd(g), newSessionImportCmd(g), newSessionHandoffCmd(g),
		newSessionMessagesCmd(g))
	return cmd
}

// newSessionListCmd is `webcodex session list`: Workflow Sessions, newest
// first.
func newSessionListCmd(g *globals) *cobra.Command {
	var (
		project, lifecycle string
		limit              int
		asJSON             bool
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List Workflow Sessions, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withWorkflow(cmd.Context(), g, func(svc *workflow.Service) error {
				ss, total, err := svc.Store().List(cmd.Context(), workflow.ListFilter{Project: project, Lifecycle: workflow.Lifecycle(lifecycle), Limit: limit})
				if err != nil {
					return err
				}
				return printSessions(cmd.OutOrStdout(), ss, total, asJSON)
			})
		},
	}
	list.Flags().StringVar(&project, "project", "", "only sessions of this project id")
	list.Flags().StringVar(&lifecycle, "lifecycle", "", "active or closed")
	list.Flags().IntVar(&limit, "limit", 50, "most sessions to list")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return list
}

// newSessionShowCmd is `webcodex session show`: one session and its newest
// events.
func newSessionShowCmd(g *globals) *cobra.Command {
	var (
		showLimit int
		showJSON  bool
	)
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one session and its newest events",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withWorkflow(cmd.Context(), g, func(svc *workflow.Service) error {
				id, err := workflow.ParseSessionID(args[0])
				if err != nil {
					return err
				}
				sess, evs, err := svc.Summary(cmd.Context(), id, showLimit)
				if err != nil {
					return err
				}
				return printSession(cmd.OutOrStdout(), sess, evs, showJSON)
			})
		},
	}
	show.Flags().IntVar(&showLimit, "limit", workflow.SummaryDefault, fmt.Sprintf("events to show (max %d)", workflow.SummaryMax))
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON")
	return show
}

// newSessionExportCmd is `webcodex session export`: sessions as a
// version-2 JSON ledger.
func newSessionExportCmd(g *globals) *cobra.Command {
	var (
		out string
		all bool
	)
	export := &cobra.Command{
		Use:   "export [ID...]",
		Short: "Write sessions as a version-2 JSON ledger",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !all {
				return fmt.Errorf("name at least one session id, or pass --all")
			}
			return withWorkflow(cmd.Context(), g, func(svc *workflow.Service) error {
				ids := args
				if all {
					ss, _, err := svc.Store().List(cmd.Context(), workflow.ListFilter{})
					if err != nil {
						return err
					}
					ids = nil
					for _, s := range ss {
						ids = append(ids, s.ID)
					}
					sort.Strings(ids)
				}
				for _, id := range ids {
					if _, err := workflow.ParseSessionID(id); err != nil {
						return err
					}
				}
				l, err := workflow.Export(cmd.Context(), svc.Store(), ids, time.Now())
				if err != nil {
					return err
				}
				return writeJSONFile(cmd.OutOrStdout(), out, l)
			})
		},
	}
	export.Flags().StringVarP(&out, "output", "o", "", "write to FILE instead of standard output")
	export.Flags().BoolVar(&all, "all", false, "export every session")
	return export
}

// newSessionImportCmd is `webcodex session import`: a version-2 JSON
// ledger imported all or nothing.
func newSessionImportCmd(g *globals) *cobra.Command {
	imp := &cobra.Command{
		Use:   "import FILE",
		Short: "Import sessions from a version-2 JSON ledger",
		Long: "Import sessions from a version-2 JSON ledger (docs/ledger-format.md), all or nothing: " +
			"the file is read one session at a time, titles and events are redacted and bounded as live writes store them, " +
			"and the first invalid row, row of a project not registered here, or session id that already exists " +
			"stops the import with an error naming its line; nothing of the file is then imported. Older ledger versions are rejected. " +
			"Message boards are restored with a new generation (earlier observation tokens fail closed); a message row that cannot " +
			"prove its shape is left out and reported.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			st, _, err := g.openStores(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			rep, err := app.ImportLedger(cmd.Context(), st, f)
			if err != nil {
				return err
			}
			printImport(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	return imp
}

// newSessionHandoffCmd is `webcodex session handoff`: the session's
// deterministic handoff brief.
func newSessionHandoffCmd(g *globals) *cobra.Command {
	var handoffJSON bool
	ho := &cobra.Command{
		Use:   "handoff ID",
		Short: "Show where a task stands: the session's deterministic handoff brief",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withWorkflowStores(cmd.Context(), g, func(svc *workflow.Service, st *app.Stores) error {
				id, err := workflow.ParseSessionID(args[0])
				if err != nil {
					return err
				}
				// The board's counts come from the snapshot the session is
				// read after (nothing else writes the data directory while
				// no server runs on it).
				var guidance *handoff.GuidanceSnapshot
				if sr, ok := svc.Store().(workflow.SnapshotReader); ok {
					snap, err := sr.SessionSnapshot(cmd.Context(), id)
					if err != nil {
						return err
					}
					guidance = handoff.GuidanceOf(snap.Collaboration)
				}
				sess, err := svc.Get(cmd.Context(), id)
				if err != nil {
					return err
				}
				evs, err := svc.Store().Events(cmd.Context(), id, 0)
				if err != nil {
					return err
				}
				fb := handoff.Feedback(sess, evs, handoff.FeedbackOptions{Profile: handoff.ProfileStandard})
				ev, err := briefEvidence(cmd.Context(), cmd.ErrOrStderr(), g, id)
				if err != nil {
					return err
				}
				brief, raw := handoff.Brief(handoff.BriefInput{Session: sess, Events: evs, Feedback: &fb, Guidance: guidance, Evidence: ev,
					Goals: workflow.Correlated(cmd.Context(), app.GoalNames(st), id, handoff.BriefMaxGoals)})
				if handoffJSON {
					_, err := cmd.OutOrStdout().Write(append(raw, '\n'))
					return err
				}
				printBrief(cmd.OutOrStdout(), sess, brief)
				return nil
			})
		},
	}
	ho.Flags().BoolVar(&handoffJSON, "json", false, "print the brief's JSON exactly as tools return it")
	return ho
}

// printImport reports an import: sessions, messages, and each message row
// left out (up to workflow.MaxReportedDiscards).
func printImport(w io.Writer, rep workflow.LedgerImport) {
	fprintf(w, "Imported %d session(s)", rep.Sessions)
	if rep.Messages > 0 || rep.DiscardedMessages > 0 {
		fprintf(w, " with %d message(s)", rep.Messages)
	}
	fprintf(w, ".\n")
	if rep.DiscardedMessages == 0 {
		return
	}
	fprintf(w, "Discarded %d message row(s) that could not prove their shape:\n", rep.DiscardedMessages)
	for _, d := range rep.Discarded {
		id := d.ID
		if id == "" {
			id = "(no readable message_id)"
		}
		fprintf(w, "  %s, message %d %s: %s\n", d.Where, d.Index, id, d.Reason)
	}
	if n := rep.DiscardedMessages - len(rep.Discarded); n > 0 {
		fprintf(w, "  … and %d more\n", n)
	}
}

// briefEvidence signs the evidence journal's head and counts the session's
// records for the brief, when the data directory has a journal (nil
// otherwise; a brief never creates one).
func briefEvidence(ctx context.Context, errw io.Writer, g *globals, id string) (*handoff.BriefEvidence, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	if !app.HasJournal(cfg) {
		return nil, nil
	}
	j, err := openJournal(ctx, errw, cfg)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	return closeout.BriefEvidence(ctx, j, id), nil
}

func printBrief(w io.Writer, s workflow.Session, b handoff.HandoffBrief) {
	text := func(e handoff.Excerpt) string {
		if e.Text == nil {
			return "(not retained)"
		}
		t := strings.ReplaceAll(*e.Text, "\n", " ")
		if e.Truncated {
			t += " …"
		}
		return t
	}
	fprintf(w, "Session   %s (%s, %s) on %s\n", s.ID, b.Session.Lifecycle, b.Session.Mode, s.Project)
	fprintf(w, "Task      %s\n", text(b.Task.RootInstruction))
	if b.Task.LatestInstruction.Text != nil && b.Task.RootInstruction.Text != nil && *b.Task.LatestInstruction.Text != *b.Task.RootInstruction.Text {
		fprintf(w, "Latest    %s\n", text(b.Task.LatestInstruction))
	}
	fprintf(w, "State     %s (%d meaningful tool calls)\n", b.Progress.State, b.Progress.MeaningfulToolCalls)
	fprintf(w, "Validation %s", b.Validation.Status)
	if b.Validation.OpenFailures.Total > 0 {
		fprintf(w, ", %d open failure(s): %s", b.Validation.OpenFailures.Total, strings.Join(b.Validation.OpenFailures.Items, ", "))
	}
	fprintf(w, "\n")
	if b.Progress.Changes.Total > 0 {
		fprintf(w, "Changed   %s\n", strings.Join(b.Progress.Changes.Items, ", "))
	}
	if b.Progress.RecentFiles.Total > 0 {
		fprintf(w, "Read      %s\n", strings.Join(b.Progress.RecentFiles.Items, ", "))
	}
	if a := b.Attention; a.OpenTodos != nil {
		fprintf(w, "Board     %d open todo(s), %d question(s), %d risk(s), %d guidance; %d unresolved ACK-required\n",
			*a.OpenTodos, *a.OpenQuestions, *a.OpenRisks, *a.OpenGuidance, *a.UnresolvedAckRequired)
	}
	if gl := b.Goals; gl != nil && gl.Total > 0 {
		fprintf(w, "Goals     %d correlated:", gl.Total)
		for _, r := range gl.Items {
			fprintf(w, " %s (%s)", r.ID, r.Title)
		}
		fprintf(w, "\n")
	}
	for i, a := range b.NextActions {
		fprintf(w, "Next %d    %s\n", i+1, a)
	}
	basis := "complete"
	if !b.Basis.Complete {
		basis = "incomplete: " + strings.Join(b.Basis.ReasonCodes, ", ")
	}
	fprintf(w, "Basis     %s\n", basis)
	if e := b.Basis.Evidence; e != nil {
		fprintf(w, "Evidence  %d verified, %d sessionless, %d invalid claims, %d unknown (attribution only)\n",
			e.Verified, e.Sessionless, e.InvalidClaim, e.Unknown)
		if cp := e.Checkpoint; cp != nil {
			fprintf(w, "Signed    %s at size %d, key %s\n", cp.Origin, cp.Size, cp.KeyID)
		}
	}
}

func withWorkflow(ctx context.Context, g *globals, fn func(*workflow.Service) error) error {
	return withWorkflowStores(ctx, g, func(svc *workflow.Service, _ *app.Stores) error { return fn(svc) })
}

// withWorkflowStores is withWorkflow for a command that also reads
// another store of the data directory.
func withWorkflowStores(ctx context.Context, g *globals, fn func(*workflow.Service, *app.Stores) error) error {
	st, _, err := g.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(workflow.NewService(st.Workflow, nil), st)
}

func printSessions(w io.Writer, ss []workflow.Session, total int, asJSON bool) error {
	if asJSON {
		if ss == nil {
			ss = []workflow.Session{}
		}
		return writeJSON(w, map[string]any{"sessions": ss, "total": total})
	}
	if len(ss) == 0 {
		fprintf(w, "No sessions.\n")
		return nil
	}
	tw := table(w)
	fmt.Fprintln(tw, "ID\tPROJECT\tSTATE\tMODE\tEVENTS\tUPDATED\tTITLE")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.ID, s.Project, s.Lifecycle, s.Mode, s.EventsObserved,
			s.UpdatedAt.Local().Format("2006-01-02 15:04"), clip(s.Title, 50))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if total > len(ss) {
		fprintf(w, "(%d of %d shown)\n", len(ss), total)
	}
	return nil
}

func printSession(w io.Writer, s workflow.Session, evs []workflow.Event, asJSON bool) error {
	if asJSON {
		if evs == nil {
			evs = []workflow.Event{}
		}
		return writeJSON(w, map[string]any{"session": s, "events": evs})
	}
	fprintf(w, "Session    %s\n", s.ID)
	fprintf(w, "Project    %s\n", s.Project)
	fprintf(w, "Title      %s\n", s.Title)
	fprintf(w, "State      %s (%s)\n", s.Lifecycle, s.Mode)
	fprintf(w, "Created    %s\n", s.CreatedAt.Local().Format(time.RFC3339))
	if s.ClosedAt != nil {
		fprintf(w, "Closed     %s\n", s.ClosedAt.Local().Format(time.RFC3339))
	}
	if s.ExecutionContext != (workflow.ExecutionContext{}) {
		fprintf(w, "Defaults   cwd=%q shell=%q\n", s.ExecutionContext.DefaultCwd, s.ExecutionContext.DefaultShell)
	}
	fprintf(w, "Events     %d observed, %d shown%s\n", s.EventsObserved, len(evs), map[bool]string{true: " (older events dropped by retention)", false: ""}[s.RetentionTruncated])
	if s.EventsPurged > 0 {
		fprintf(w, "Purged     %d events removed by the retention policy after the session closed\n", s.EventsPurged)
	}
	fprintf(w, "Calls      %d started, %d failed, %d replays (no new effect); %d instructions; %d guard denials\n\n",
		s.Counters.ToolCalls, s.Counters.ToolFailures, s.Counters.Replays, s.Counters.Instructions, s.Counters.GuardDenials)
	tw := table(w)
	fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tTOOL\tROLE\tOUTCOME\tDETAIL")
	for _, e := range evs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.At.Local().Format("15:04:05"), e.Kind, e.Tool, e.Role,
			strings.TrimSpace(string(e.Outcome)+" "+e.ErrorKind), clip(detail(e), 60))
	}
	return tw.Flush()
}

func detail(e workflow.Event) string {
	switch {
	case e.Replayed:
		return "replay of " + e.ReplayOf + ", no new effect"
	case e.Text != "":
		return strings.ReplaceAll(e.Text, "\n", " ")
	case len(e.ChangedPaths) > 0:
		return "changed " + strings.Join(e.ChangedPaths, ", ")
	case len(e.ObservedPaths) > 0:
		return "read " + strings.Join(e.ObservedPaths, ", ")
	}
	return ""
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
