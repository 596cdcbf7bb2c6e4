package console

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// Bounds of the attention page.
const (
	// AttentionScanSessions is how many of the viewer's active sessions
	// (most recently updated first) the attention page judges.
	AttentionScanSessions = 25
	// InvalidClaimWindow is how far back the page looks for invalid
	// claims, and InvalidClaimScan how many of a session's newest
	// evidence records it reads for them.
	InvalidClaimWindow = 24 * time.Hour
	InvalidClaimScan   = 200
)

// Severity ranks an attention row: the page lists rows by rank (lowest
// first), then most recently updated first.
type Severity int

// The ranks, most urgent first. A row takes the rank of its most urgent
// cause: its handoff progress state when that is blocked or
// needs_validation, else an unresolved ACK-required message, an open todo
// or an open question; anything else (jobs, lost jobs, invalid claims alone) ranks last.
const (
	SeverityBlocked Severity = iota
	SeverityNeedsValidation
	SeverityWaitingMessages
	SeverityOther
)

// severityOf ranks it (see Severity).
func severityOf(it AttentionItem) Severity {
	switch {
	case it.State == handoff.StateBlocked:
		return SeverityBlocked
	case it.State == handoff.StateNeedsValidation:
		return SeverityNeedsValidation
	case it.AckRequired > 0 || it.OpenTodos > 0 || it.OpenQuestions > 0:
		return SeverityWaitingMessages
	}
	return SeverityOther
}

// AttentionData is the model of the home page.
type AttentionData struct {
	Items []AttentionItem
	// Scanned counts the sessions judged; Active how many active sessions
	// the viewer has (more than Scanned: the rest were not judged).
	Scanned, Active int
	// The other bounds of a judgement, for the page to say: the retained
	// ledger tail per session, the newest jobs read per project, and the
	// newest evidence records read for invalid claims.
	TailEvents, JobsRead, EvidenceRead int
	// JobsNote says why jobs were not judged, "" when they were.
	JobsNote string
}

// AttentionItem is one session that needs a person or an agent, with
// every reason.
type AttentionItem struct {
	Session workflow.Session
	// State is the handoff progress state.
	State string
	// AckRequired, OpenTodos and OpenQuestions are the board's
	// unresolved ACK-required messages, open todos and open questions.
	AckRequired, OpenTodos, OpenQuestions int
	// Jobs counts the session's jobs by state (running, queued, lost).
	Running, Queued, Lost int
	// InvalidClaims counts invalid claims on the session in the last
	// InvalidClaimWindow (among its newest InvalidClaimScan records).
	InvalidClaims int
	// Reasons name every cause, most urgent first (why, then reasons).
	Reasons []string
	// Severity is the row's rank on the page.
	Severity Severity
}

func (s *Server) attention(w http.ResponseWriter, r *http.Request) error {
	ctx, p := r.Context(), viewerOf(r).Principal
	if err := requireRead(p); err != nil {
		return err
	}
	sessions, total, err := s.opts.Sessions.List(ctx, workflow.ListFilter{Fingerprint: p.AuthorityFingerprint(), Lifecycle: workflow.Active, Limit: AttentionScanSessions})
	if err != nil {
		return err
	}
	data := AttentionData{Scanned: len(sessions), Active: total,
		TailEvents: workflow.TailLimit, JobsRead: jobs.MaxListLimit, EvidenceRead: InvalidClaimScan}
	jobsBySession, note := s.sessionJobs(ctx, p.AuthorityFingerprint(), sessions)
	data.JobsNote = note
	since := s.opts.Now().Add(-InvalidClaimWindow)
	for _, sess := range sessions {
		it := AttentionItem{Session: sess}
		b, _, err := s.brief(ctx, sess)
		if err != nil {
			return err
		}
		it.State = b.Progress.State
		if n := b.Attention.UnresolvedAckRequired; n != nil {
			it.AckRequired = *n
		}
		if n := b.Attention.OpenTodos; n != nil {
			it.OpenTodos = *n
		}
		if n := b.Attention.OpenQuestions; n != nil {
			it.OpenQuestions = *n
		}
		for _, j := range jobsBySession[sess.ID] {
			switch j.State {
			case jobs.Running:
				it.Running++
			case jobs.Queued:
				it.Queued++
			case jobs.Lost:
				it.Lost++
			}
		}
		it.InvalidClaims = s.invalidClaims(ctx, sess.ID, since)
		it.Reasons = append(s.why(ctx, sess, b, jobsBySession[sess.ID]), reasons(it, b, jobsBySession[sess.ID])...)
		if len(it.Reasons) > 0 {
			it.Severity = severityOf(it)
			data.Items = append(data.Items, it)
		}
	}
	slices.SortStableFunc(data.Items, func(a, b AttentionItem) int {
		return cmp.Or(cmp.Compare(a.Severity, b.Severity), b.Session.UpdatedAt.Compare(a.Session.UpdatedAt))
	})
	return s.render(w, r, http.StatusOK, "attention", "Attention", "attention", data)
}

// reasons says what else makes it need attention besides what why names
// from the brief: running and queued jobs when the brief could not count
// them, lost jobs (named), and invalid claims.
func reasons(it AttentionItem, b handoff.HandoffBrief, sessionJobs []jobs.Job) []string {
	var out []string
	add := func(n int, one, many string) {
		if n > 0 {
			out = append(out, count(n, one, many))
		}
	}
	if b.Attention.BlockingJobs == nil {
		add(it.Running, "running job", "running jobs")
		add(it.Queued, "queued job", "queued jobs")
	}
	if it.Lost > 0 {
		var names []string
		for _, j := range sessionJobs {
			if j.State == jobs.Lost {
				names = append(names, jobLabel(j))
			}
		}
		out = append(out, count(it.Lost, "lost job", "lost jobs")+items(names, it.Lost))
	}
	add(it.InvalidClaims, "invalid claim in the last day", "invalid claims in the last day")
	return out
}

// sessionJobs returns the viewer's running, queued and lost jobs of the
// listed sessions, per session, read per project (the jobs API's
// access), and a note when they could not be read.
func (s *Server) sessionJobs(ctx context.Context, fingerprint string, sessions []workflow.Session) (map[string][]jobs.Job, string) {
	if s.opts.Jobs == nil {
		return nil, "jobs are not configured on this server"
	}
	out := map[string][]jobs.Job{}
	var projects []string
	for _, sess := range sessions {
		if !slices.Contains(projects, sess.Project) {
			projects = append(projects, sess.Project)
		}
	}
	for _, pr := range projects {
		js, _, err := s.opts.Jobs.List(ctx, jobs.Access{Project: pr, Fingerprint: fingerprint}, jobs.ListFilter{Limit: jobs.MaxListLimit})
		if err != nil {
			return nil, "jobs could not be read"
		}
		for _, j := range js {
			if j.State != jobs.Running && j.State != jobs.Queued && j.State != jobs.Lost {
				continue
			}
			for _, sess := range sessions {
				if j.InSession(sess.ID) {
					out[sess.ID] = append(out[sess.ID], j)
				}
			}
		}
	}
	return out, ""
}

// invalidClaims counts the invalid claims on session id at or after
// since, among its newest InvalidClaimScan evidence records.
func (s *Server) invalidClaims(ctx context.Context, id string, since time.Time) int {
	if s.opts.Journal == nil {
		return 0
	}
	c, err := s.opts.Journal.SessionCounts(ctx, id)
	if err != nil || c.InvalidClaim == 0 {
		return 0
	}
	entries, err := s.opts.Journal.SessionRecords(ctx, id, InvalidClaimScan)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if e.Record.Binding == evidence.BindingInvalidClaim && !e.Record.At.Before(since) {
			n++
		}
	}
	return n
}
