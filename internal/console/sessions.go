package console

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// SessionListLimit is the number of sessions one list page shows.
const SessionListLimit = 50

// MaxSessionJobs bounds the jobs a session page lists (newest first).
const MaxSessionJobs = 20

// readScope is the scope every console read needs: the scope of the
// API's session, board and evidence reads.
const readScope = auth.ScopeProjectRead

// requireRead refuses a principal without readScope.
func requireRead(p auth.Principal) error {
	if !p.Has(readScope) {
		return failure.New(failure.InsufficientScope, "reading sessions requires %s", readScope)
	}
	return nil
}

// reachableProjects returns the ids of the registered projects the
// viewer reaches: not a runner's project of another authority group, and
// only its own project for a project-bound credential.
func (s *Server) reachableProjects(r *http.Request) ([]string, error) {
	p := viewerOf(r).Principal
	ps, err := s.opts.Projects.List(r.Context())
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, pr := range ps {
		if pr.Owner != "" && pr.Owner != p.Owner {
			continue // a runner's project, of another authority group
		}
		if p.Project != "" && pr.ID != p.Project && pr.Source != p.Project {
			continue // the principal reaches one other project only
		}
		ids = append(ids, pr.ID)
	}
	return ids, nil
}

// authorize returns session id when p may read it: the API's own claim
// check (registration and authority group). An unknown id and another
// group's id get the same unknown_session_id error, which the console
// answers 404.
func (s *Server) authorize(ctx context.Context, p auth.Principal, id string) (workflow.Session, error) {
	if err := requireRead(p); err != nil {
		return workflow.Session{}, err
	}
	v := s.opts.Sessions.ReadClaim(ctx, id).Check(workflow.Check{Fingerprint: p.AuthorityFingerprint()})
	if !v.Verified() {
		if k := v.Kind(); k != failure.UnknownSessionID && k != failure.SessionAuthorityDenied {
			return workflow.Session{}, v.Error()
		}
		return workflow.Session{}, failure.New(failure.UnknownSessionID, "no session %q in your authority group", id)
	}
	return v.Claim.Session, nil
}

// ListData is the model of the sessions list.
type ListData struct {
	Filter   ListFilter
	Projects []string
	States   []string
	Sessions []SessionItem
	Total    int
	// Next and Prev are offsets of the neighbouring pages (-1: none).
	Next, Prev int
}

// ListFilter is the list's query.
type ListFilter struct {
	Project   string
	Lifecycle string
	// State is a handoff progress state (blocked, needs_validation, ...);
	// filtering by it reads each listed session's ledger.
	State  string
	Offset int
}

// SessionItem is one listed session.
type SessionItem struct {
	workflow.Session
	// State is the handoff progress state ("" when not computed).
	State string
}

// States lists the progress states one can filter by.
var States = []string{handoff.StateBlocked, handoff.StateNeedsValidation, handoff.StateInsufficientEvidence,
	handoff.StateReadyToContinue, handoff.StateClosed}

func (s *Server) sessionList(w http.ResponseWriter, r *http.Request) error {
	ctx, p := r.Context(), viewerOf(r).Principal
	if err := requireRead(p); err != nil {
		return err
	}
	q := r.URL.Query()
	f := ListFilter{Project: q.Get("project"), Lifecycle: q.Get("lifecycle"), State: q.Get("state")}
	if f.Lifecycle != "" && f.Lifecycle != string(workflow.Active) && f.Lifecycle != string(workflow.Closed) {
		return failure.New(failure.InvalidArguments, "lifecycle must be active or closed")
	}
	if f.State != "" && !slices.Contains(States, f.State) {
		return failure.New(failure.InvalidArguments, "state must be one of %v", States)
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return failure.New(failure.InvalidArguments, "offset must be a number ≥ 0")
		}
		f.Offset = n
	}
	data := ListData{Filter: f, Next: -1, Prev: -1, States: States}
	projects, err := s.reachableProjects(r)
	if err != nil {
		return err
	}
	data.Projects = projects
	lf := workflow.ListFilter{Project: f.Project, Fingerprint: p.AuthorityFingerprint(), Lifecycle: workflow.Lifecycle(f.Lifecycle),
		Limit: SessionListLimit, Offset: f.Offset}
	if f.State != "" {
		// The state is a projection of each ledger: scan a bounded window
		// and keep the matches.
		lf.Limit, lf.Offset = workflow.ListMax, 0
	}
	sessions, total, err := s.opts.Sessions.List(ctx, lf)
	if err != nil {
		return err
	}
	data.Total = total
	for _, sess := range sessions {
		item := SessionItem{Session: sess}
		if f.State != "" {
			if item.State, err = s.progressState(ctx, sess); err != nil {
				return err
			}
			if item.State != f.State {
				continue
			}
		}
		data.Sessions = append(data.Sessions, item)
	}
	if f.State != "" {
		data.Total = len(data.Sessions)
	} else {
		if f.Offset+len(sessions) < total {
			data.Next = f.Offset + SessionListLimit
		}
		if f.Offset > 0 {
			data.Prev = max(0, f.Offset-SessionListLimit)
		}
	}
	return s.render(w, r, http.StatusOK, "sessions", "Sessions", "sessions", data)
}

// progressState is the handoff progress state of sess, from the same
// projection handoff_brief uses.
func (s *Server) progressState(ctx context.Context, sess workflow.Session) (string, error) {
	b, _, err := s.brief(ctx, sess)
	if err != nil {
		return "", err
	}
	return b.Progress.State, nil
}

// SessionView is everything the session page and the export show.
type SessionView struct {
	Session workflow.Session
	// Brief is handoff_brief version 1, exactly as the handoff tool
	// projects it.
	Brief    handoff.HandoffBrief
	Timeline Timeline
	// Validation is the session's validation picture.
	Validation ValidationView
	// Diffs are the newest recorded change summaries of changed paths
	// (see DiffSummary), by path.
	Diffs map[string]*DiffSummary
	// Jobs are the session's newest jobs; JobsNote says why there are
	// none to show when they cannot be read.
	Jobs     []jobs.Job
	JobsNote string
	// Threads are the board's retained messages as threads (roots newest
	// first, replies oldest first); MessagesMore when a page could not
	// hold them all.
	Threads      []Thread
	MessagesMore bool
	Evidence     *EvidenceView
	// Why names what makes the session need a person or an agent (the
	// brief's causes with their items, see why); empty when nothing does.
	Why []string
	// CanPost is true when the viewer's token may post to the board.
	CanPost bool
	// Actions are what the viewer may do to the board's open messages;
	// nil in the export and when the session cannot change.
	Actions *BoardActions
	// Exported is true in the export file.
	Exported bool

	events []workflow.Event
}

// Thread is a root message and its retained replies.
type Thread struct {
	Root    MessageItem
	Replies []MessageItem
}

// MessageItem is one message of the board as the session page shows it:
// the message and the actions the page offers on it (nil: none).
type MessageItem struct {
	workflow.Message
	Actions *BoardActions
}

// BoardActions are the board forms the session page offers the viewer on
// an open message: Resolve (resolve_session_message) on any, Answer
// (post_session_message of kind answer) on a question; each is true only
// when the viewer's token holds the tool's scopes. CSRF is the viewer's
// console session's token for the forms.
type BoardActions struct {
	SessionID       string
	CSRF            string
	Resolve, Answer bool
}

// offer gives every message of v's threads the actions a; a nil a, or
// one that allows nothing, offers none.
func (v *SessionView) offer(a *BoardActions) {
	if a == nil || (!a.Resolve && !a.Answer) {
		a = nil
	}
	v.Actions = a
	for i := range v.Threads {
		v.Threads[i].Root.Actions = a
		for j := range v.Threads[i].Replies {
			v.Threads[i].Replies[j].Actions = a
		}
	}
}

// EvidenceView is the evidence part of the session page.
type EvidenceView struct {
	Counts evidence.Counts
	// Checkpoint is the newest signed checkpoint, nil before the first.
	Checkpoint *evidence.SignedCheckpoint
	RootHash   string
	Proves     string
}

// view gathers the session view: the ledger tail, the brief over it,
// validation and the first timeline page.
func (s *Server) view(ctx context.Context, sess workflow.Session) (*SessionView, error) {
	brief, evs, err := s.brief(ctx, sess)
	if err != nil {
		return nil, err
	}
	v := &SessionView{Session: sess, Brief: brief, events: evs}
	v.Validation = validationView(evs)
	v.Diffs = diffSummaries(evs)
	v.Timeline = page(rows(evs), 0)
	v.Timeline.EventsObserved, v.Timeline.Truncated = sess.EventsObserved, sess.RetentionTruncated
	return v, nil
}

// brief projects handoff_brief version 1 of sess exactly as the handoff
// tool does (without the workspace, which the console does not query),
// over its retained events, which it returns too.
func (s *Server) brief(ctx context.Context, sess workflow.Session) (handoff.HandoffBrief, []workflow.Event, error) {
	var guidance *handoff.GuidanceSnapshot
	if s.opts.Snapshots != nil {
		if snap, err := s.opts.Snapshots.SessionSnapshot(ctx, sess.ID); err == nil {
			guidance = handoff.GuidanceOf(snap.Collaboration)
		}
	}
	evs, err := s.opts.Sessions.Store().Events(ctx, sess.ID, 0)
	if err != nil {
		return handoff.HandoffBrief{}, nil, err
	}
	var jobSnap *handoff.JobsSnapshot
	if s.opts.Jobs != nil {
		acc := jobs.Access{Project: sess.Project, Fingerprint: sess.OwnerFingerprint}
		if c, err := s.opts.Jobs.CountSession(ctx, acc, sess.ID, sess.JobMarkers); err == nil {
			jobSnap = &handoff.JobsSnapshot{Active: c.Active, Blocking: c.Blocking, TerminalPending: c.TerminalPending}
		}
	}
	fb := handoff.Feedback(sess, evs, handoff.FeedbackOptions{Profile: handoff.ProfileFull, Jobs: jobSnap})
	var ev *handoff.BriefEvidence
	if s.opts.Journal != nil {
		if c, err := s.opts.Journal.SessionCounts(ctx, sess.ID); err == nil {
			ev = &handoff.BriefEvidence{Verified: c.Verified, Sessionless: c.Sessionless, InvalidClaim: c.InvalidClaim, Unknown: c.Unknown, Proves: handoff.EvidenceProves}
		}
	}
	b, _ := handoff.Brief(handoff.BriefInput{Session: sess, Events: evs, Feedback: &fb, Guidance: guidance, Evidence: ev})
	return b, evs, nil
}

// details adds the parts only the full page and the export show: jobs,
// board and evidence.
func (s *Server) details(ctx context.Context, v *SessionView, p auth.Principal) {
	sess := v.Session
	if s.opts.Jobs == nil {
		v.JobsNote = "jobs are not configured on this server"
	} else {
		js, _, err := s.opts.Jobs.List(ctx, jobs.Access{Project: sess.Project, Fingerprint: p.AuthorityFingerprint()}, jobs.ListFilter{Limit: jobs.MaxListLimit})
		if err != nil {
			v.JobsNote = "jobs could not be read: " + failure.MessageOf(err)
		}
		for _, j := range js {
			if j.InSession(sess.ID) && len(v.Jobs) < MaxSessionJobs {
				v.Jobs = append(v.Jobs, j)
			}
		}
	}
	if s.opts.Board != nil {
		msgs, more, err := s.opts.Board.List(ctx, sess.ID, workflow.MessageFilter{Limit: workflow.MessageListMax})
		if err == nil {
			v.Threads, v.MessagesMore = threads(msgs), more
		}
	}
	if s.opts.Journal != nil {
		if c, err := s.opts.Journal.SessionCounts(ctx, sess.ID); err == nil {
			e := &EvidenceView{Counts: c, Proves: handoff.EvidenceProves}
			if cp, err := s.opts.Journal.Latest(ctx); err == nil {
				e.Checkpoint, e.RootHash = &cp, base64.StdEncoding.EncodeToString(cp.Root)
			}
			v.Evidence = e
		}
	}
	v.Why = s.why(ctx, sess, v.Brief, v.Jobs)
	v.CanPost = sess.Mutable() && s.mayCall(p, PostTool)
}

// boardActions are the board forms the session page offers p on sess
// (nil when the session cannot change); csrf is p's console session's
// CSRF token.
func (s *Server) boardActions(sess workflow.Session, p auth.Principal, csrf string) *BoardActions {
	if !sess.Mutable() {
		return nil
	}
	return &BoardActions{SessionID: sess.ID, CSRF: csrf, Resolve: s.mayCall(p, ResolveTool), Answer: s.mayCall(p, PostTool)}
}

// mayCall reports whether p holds every scope the API requires for tool
// (the kernel's registry decides; the kernel checks again on dispatch).
func (s *Server) mayCall(p auth.Principal, tool string) bool {
	t, ok := s.opts.Kernel.Registry().Lookup(tool)
	if !ok {
		return false
	}
	for _, sc := range t.Scopes {
		if !p.Has(sc) {
			return false
		}
	}
	return true
}

// threads groups messages (newest first) into threads: a message whose
// parent is retained is shown under it.
func threads(msgs []workflow.Message) []Thread {
	byID := map[string]int{}
	var out []Thread
	for _, m := range msgs {
		if m.ReplyTo == "" || !slices.ContainsFunc(msgs, func(o workflow.Message) bool { return o.ID == m.ReplyTo }) {
			byID[m.ID] = len(out)
			out = append(out, Thread{Root: MessageItem{Message: m}})
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if _, root := byID[m.ID]; root {
			continue
		}
		// Walk up to the thread's root.
		parent := m.ReplyTo
		for range len(msgs) {
			if _, ok := byID[parent]; ok {
				break
			}
			j := slices.IndexFunc(msgs, func(o workflow.Message) bool { return o.ID == parent })
			if j < 0 {
				break
			}
			parent = msgs[j].ReplyTo
		}
		if t, ok := byID[parent]; ok {
			out[t].Replies = append(out[t].Replies, MessageItem{Message: m})
		}
	}
	return out
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) error {
	v, err := s.sessionPage(r)
	if err != nil {
		return err
	}
	viewer := viewerOf(r)
	v.offer(s.boardActions(v.Session, viewer.Principal, viewer.CSRF))
	return s.render(w, r, http.StatusOK, "session", sessionTitle(v.Session), "sessions", v)
}

// sessionPage authorizes the request's session id for its viewer and
// builds everything the session page and the export show.
func (s *Server) sessionPage(r *http.Request) (*SessionView, error) {
	ctx, p := r.Context(), viewerOf(r).Principal
	sess, err := s.authorize(ctx, p, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	v, err := s.view(ctx, sess)
	if err != nil {
		return nil, err
	}
	s.details(ctx, v, p)
	return v, nil
}

func (s *Server) timeline(w http.ResponseWriter, r *http.Request) error {
	ctx, p := r.Context(), viewerOf(r).Principal
	sess, err := s.authorize(ctx, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	n := 0
	if q := r.URL.Query().Get("page"); q != "" {
		if n, err = strconv.Atoi(q); err != nil || n < 0 {
			return failure.New(failure.InvalidArguments, "page must be a number ≥ 0")
		}
	}
	evs, err := s.opts.Sessions.Store().Events(ctx, sess.ID, 0)
	if err != nil {
		return err
	}
	t := page(rows(evs), n)
	t.EventsObserved, t.Truncated = sess.EventsObserved, sess.RetentionTruncated
	return s.render(w, r, http.StatusOK, "timeline", "Timeline · "+sessionTitle(sess), "sessions", TimelineData{Session: sess, Timeline: t})
}

// TimelineData is the model of the timeline page.
type TimelineData struct {
	Session  workflow.Session
	Timeline Timeline
}

func sessionTitle(sess workflow.Session) string {
	if sess.Title != "" {
		return clip(sess.Title)
	}
	return sess.ID
}

// exportSession writes the session as one self-contained HTML file: CSS
// inline, no script, nothing loaded from anywhere; what it shows was
// redacted by the stores before it was stored.
func (s *Server) exportSession(w http.ResponseWriter, r *http.Request) error {
	v, err := s.sessionPage(r)
	if err != nil {
		return err
	}
	sess := v.Session
	v.CanPost, v.Exported = false, true
	v.Timeline.Rows = rows(v.events) // every retained row, not one page
	b, err := s.renderExport(v)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Security-Policy", ExportContentSecurityPolicy)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", sess.ID+".html"))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return nil
}

// bundle serves the session's evidence bundle (the file `webcodex
// evidence export --session` writes) as a download.
func (s *Server) bundle(w http.ResponseWriter, r *http.Request) error {
	ctx, p := r.Context(), viewerOf(r).Principal
	sess, err := s.authorize(ctx, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if s.opts.Journal == nil {
		return failure.New(failure.NotFound, "this server keeps no evidence journal")
	}
	b, err := s.opts.Journal.ExportBundle(ctx, sess.ID)
	if err != nil {
		return err
	}
	body, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return failure.Wrap(failure.Internal, err, "encode bundle")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", sess.ID+".evidence.json"))
	w.WriteHeader(http.StatusOK)
	w.Write(append(body, '\n'))
	return nil
}
