package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/audit"
)

// newAuditCmd is the offline reader of the Action Audit trail. It opens
// audit.db alone (never workflow.db) and works while a server runs.
func newAuditCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read the Action Audit trail: HTTP/API calls, who made them, how they went",
		Long: "Read the Action Audit trail in audit.db: audit sessions group the HTTP/API calls of a client " +
			"(REST, GPT Actions, MCP). They are not Workflow Sessions and share nothing with them.",
	}
	var (
		status  string
		limit   int
		asJSON  bool
		events  int
		session string
	)
	sessions := &cobra.Command{
		Use:   "sessions",
		Short: "List audit sessions, most recent activity first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAudit(cmd.Context(), g, func(svc *audit.Service) error {
				ss, err := svc.ListSessions(cmd.Context(), audit.Status(status), limit)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), map[string]any{"sessions": ss})
				}
				printAuditSessions(cmd.OutOrStdout(), ss)
				return nil
			})
		},
	}
	sessions.Flags().StringVar(&status, "status", "", "open or closed")
	sessions.Flags().IntVar(&limit, "limit", audit.DefaultSessionsLimit, fmt.Sprintf("most sessions to list (max %d)", audit.MaxSessionsLimit))
	sessions.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one audit session and its newest events",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAudit(cmd.Context(), g, func(svc *audit.Service) error {
				sess, evs, err := svc.SessionWithEvents(cmd.Context(), args[0], events)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), map[string]any{"session": sess, "events": evs})
				}
				printAuditSession(cmd.OutOrStdout(), sess, evs)
				return nil
			})
		},
	}
	show.Flags().IntVar(&events, "events", audit.DefaultEventsLimit, fmt.Sprintf("newest events to show (max %d)", audit.MaxEventsLimit))
	show.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	stats := &cobra.Command{
		Use:   "stats",
		Short: "Aggregate the newest sessions (or one) by endpoint, status, category and caller",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAudit(cmd.Context(), g, func(svc *audit.Service) error {
				st, err := svc.Stats(cmd.Context(), session, limit)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), st)
				}
				printAuditStats(cmd.OutOrStdout(), st)
				return nil
			})
		},
	}
	stats.Flags().StringVar(&session, "session", "", "only this audit session")
	stats.Flags().IntVar(&limit, "limit", audit.DefaultStatsSessions, fmt.Sprintf("newest sessions to scan (max %d)", audit.MaxStatsSessions))
	stats.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	tools := &cobra.Command{
		Use:   "tools",
		Short: "Per-tool report of model tool calls: which tools hurt agents",
		Long: "Aggregate the newest model_ergonomics records per tool: calls, success rate, pre-result " +
			"rejections, p50/p95 duration, mean/p95 result size (what the model had to read) and the most " +
			"frequent error kinds.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAudit(cmd.Context(), g, func(svc *audit.Service) error {
				rep, err := svc.Tools(cmd.Context(), events)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), rep)
				}
				printToolReport(cmd.OutOrStdout(), rep)
				return nil
			})
		},
	}
	tools.Flags().IntVar(&events, "events", audit.DefaultToolReportEvents, fmt.Sprintf("newest tool calls to scan (max %d)", audit.MaxToolReportEvents))
	tools.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	closeCmd := &cobra.Command{
		Use:   "close ID",
		Short: "Close an audit session (later calls without an id start a new one)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAudit(cmd.Context(), g, func(svc *audit.Service) error {
				sess, err := svc.CloseSession(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				fprintf(cmd.OutOrStdout(), "Audit session %s is %s (%d actions).\n", sess.SessionID, sess.Status, sess.TotalActions)
				return nil
			})
		},
	}
	cmd.AddCommand(sessions, show, stats, tools, closeCmd)
	return cmd
}

func withAudit(ctx context.Context, g *globals, fn func(*audit.Service) error) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	st, closeStore, err := app.OpenAudit(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	return fn(audit.NewService(st, nil))
}

func unixTime(sec int64) string {
	return time.Unix(sec, 0).Local().Format("2006-01-02 15:04:05")
}

func printAuditSessions(w io.Writer, ss []audit.Session) {
	if len(ss) == 0 {
		fprintf(w, "No audit sessions.\n")
		return
	}
	tw := table(w)
	fmt.Fprintln(tw, "ID\tSTATUS\tACTIONS\tOK\tFAILED\tTOTAL MS\tLAST EVENT")
	for _, s := range ss {
		last := "-"
		if s.LastEventAt != nil {
			last = unixTime(*s.LastEventAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", clip(s.SessionID, 40), s.Status, s.TotalActions,
			s.SuccessCount, s.FailedCount, s.TotalDurationMS, last)
	}
	tw.Flush()
}

func printAuditSession(w io.Writer, s audit.Session, evs []audit.EventView) {
	fprintf(w, "Audit session %s (%s), created %s\n", s.SessionID, s.Status, unixTime(s.CreatedAt))
	fprintf(w, "%d actions: %d ok, %d failed, %d timeout/unknown, %d warnings; %d ms in total\n",
		s.TotalActions, s.SuccessCount, s.FailedCount, s.TimeoutOrUnknownCount, s.WarningCount, s.TotalDurationMS)
	if len(evs) == 0 {
		fprintf(w, "\nNo events retained.\n")
		return
	}
	fprintf(w, "\nNewest %d events, oldest first:\n", len(evs))
	tw := table(w)
	fmt.Fprintln(tw, "TIME\tSTATUS\tHTTP\tMS\tENDPOINT\tOPERATION\tACTION\tPROJECT")
	for _, e := range evs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", unixTime(e.StartedAt), e.Status, e.HTTPStatus, e.DurationMS,
			e.Endpoint, e.Operation, clip(e.ActionName, 40), orDash(e.Project))
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printAuditStats(w io.Writer, st audit.Stats) {
	fprintf(w, "Scanned %d of %d events in %d of %d sessions", st.EventsScanned, st.EventsAvailable, st.SessionsScanned, st.SessionsAvailable)
	if st.Partial {
		fprintf(w, " (partial: not everything in scope was read)")
	}
	fprintf(w, ".\n")
	for _, sec := range []struct {
		title string
		m     map[string]int64
	}{
		{"Status", st.ByStatus}, {"Category", st.ByCategory}, {"Endpoint", st.ByEndpoint},
		{"Project", st.ByProject}, {"Caller kind", st.Attribution.ByPrincipalKind},
	} {
		fprintf(w, "\n%s:\n", sec.title)
		printCounts(w, sec.m)
	}
	if len(st.Attribution.ByOAuthClient) > 0 {
		fprintf(w, "\nOAuth clients:\n")
		tw := table(w)
		for _, c := range st.Attribution.ByOAuthClient {
			fmt.Fprintf(tw, "  %s\t%s\t%d\n", c.ClientID, orDash(c.Name), c.Count)
		}
		tw.Flush()
	}
	fprintf(w, "\nDistinct changed files: %d; distinct job ids: %d; unattributed events: %d\n",
		st.ChangedFilesDistinctCount, st.JobIDsDistinctCount, st.Attribution.UnattributedCount)
}

// printCounts prints m largest count first (ties by key).
func printCounts(w io.Writer, m map[string]int64) {
	if len(m) == 0 {
		fprintf(w, "  (none)\n")
		return
	}
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b))
	})
	tw := table(w)
	for _, k := range keys {
		fmt.Fprintf(tw, "  %s\t%d\n", orDash(k), m[k])
	}
	tw.Flush()
}

func printToolReport(w io.Writer, rep audit.ToolReport) {
	if len(rep.Tools) == 0 {
		fprintf(w, "No model tool calls recorded.\n")
		return
	}
	tw := table(w)
	fmt.Fprintln(tw, "TOOL\tCATEGORY\tCALLS\tOK%\tREJECTED\tP50 MS\tP95 MS\tMEAN BYTES\tP95 BYTES\tTOP ERRORS")
	for _, t := range rep.Tools {
		var errs []string
		for _, k := range t.TopErrorKinds {
			errs = append(errs, fmt.Sprintf("%s×%d", k.Kind, k.Count))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t%s\n", t.Tool, t.Category, t.Count, t.SuccessRate*100,
			t.Rejected, t.P50MS, t.P95MS, t.MeanBytes, t.P95Bytes, orDash(strings.Join(errs, ", ")))
	}
	tw.Flush()
	fprintf(w, "\n%d tool calls scanned", rep.EventsScanned)
	if rep.Truncated {
		fprintf(w, " (the newest of %d; use --events to scan more)", rep.EventsAvailable)
	}
	fprintf(w, ".\n")
	printLoopTiming(w, rep.LoopTiming)
}

// printLoopTiming prints the agent-loop gaps: response to next request of
// the same window and principal (not model turns).
func printLoopTiming(w io.Writer, lt audit.LoopTiming) {
	if lt.Pairs == 0 {
		fprintf(w, "Loop gaps: none measurable")
	} else {
		fprintf(w, "Loop gaps (response to the next request of the same window): %d pairs, p50 %d ms, p90 %d ms, p95 %d ms, max %d ms",
			lt.Pairs, lt.P50MS, lt.P90MS, lt.P95MS, lt.MaxMS)
	}
	fprintf(w, "; %d of %d meaningful MCP calls scanned had no window (loop timing unavailable)", lt.Unavailable, lt.CallsSeen)
	if lt.Overlapping > 0 {
		fprintf(w, "; %d overlapping pairs", lt.Overlapping)
	}
	fprintf(w, ".\n")
}
