package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/console/sse"
	"github.com/webcodex/webcodex/internal/console/verifyrun"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

// The evidence page: the journal's status (what /api/status tells a
// runtime:read or project:read credential, plus the head and the newest
// checkpoint) and, for account:manage, "verify now": a POST (CSRF
// checked) that starts the offline verifier in the background
// (verifyrun.Runner), whose progress and findings stream over
// server-sent events. The findings name invocations of every authority
// group, like `webcodex evidence verify`, hence the operator scope.
//
//	GET  /console/evidence                the page
//	POST /console/evidence/verify         start a run (303 back to the page)
//	GET  /console/evidence/verify/events  "verify" events (the panel, HTML), then "end"
func init() {
	extraRouteFuncs = append(extraRouteFuncs, func(s *Server) {
		s.handle("GET "+Prefix+"/evidence", s.page(s.evidencePage))
		s.handle("POST "+Prefix+"/evidence/verify", s.action(s.verifyStart))
		s.handle("GET "+Prefix+"/evidence/verify/events", s.page(s.verifyEvents))
	})
}

// JournalStatus is what the evidence page reads of the journal beyond
// Journal (evidencedb.Journal provides it).
type JournalStatus interface {
	JournalID() string
	Origin() string
	KeyID() string
	Head(ctx context.Context) (evidence.Checkpoint, error)
}

// EvidenceData is the model of the evidence page.
type EvidenceData struct {
	JournalID, Origin, KeyID string
	Head                     evidence.Checkpoint
	HeadRoot                 string
	// Checkpoint is the newest signed checkpoint (nil before the first);
	// Unsigned counts the records after it.
	Checkpoint     *evidence.SignedCheckpoint
	CheckpointRoot string
	Unsigned       uint64
	// CanVerify is true for account:manage; Verify is the newest run.
	CanVerify bool
	Verify    VerifyPanel
}

// VerifyPanel is the model of the "verify_panel" fragment.
type VerifyPanel struct {
	State verifyrun.State
	// Percent is the progress of a running run (0-100).
	Percent int
	// Kinds are the report's finding kinds with their totals, sorted.
	Kinds []KindTotal
	CSRF  string
	// Live is true while the page should follow the run's events.
	Live bool
}

// KindTotal is one finding kind of a report and how many there were.
type KindTotal struct {
	Kind  evidence.FindingKind
	Count int64
}

func requireStatusScope(p auth.Principal) error {
	if !p.Has(auth.ScopeRuntimeRead) && !p.Has(auth.ScopeProjectRead) {
		return failure.New(failure.InsufficientScope, "the journal status requires %s, like /api/status", auth.ScopeRuntimeRead)
	}
	return nil
}

func requireVerifyScope(p auth.Principal) error {
	if !p.Has(auth.ScopeAccountManage) {
		return failure.New(failure.InsufficientScope, "verifying the journal requires %s: its findings cover every authority group", auth.ScopeAccountManage)
	}
	return nil
}

func (s *Server) journalStatus() (JournalStatus, error) {
	js, ok := s.opts.Journal.(JournalStatus)
	if s.opts.Journal == nil || !ok {
		return nil, failure.New(failure.Unavailable, "the evidence journal is not enabled on this server")
	}
	return js, nil
}

func (s *Server) verifier() (*verifyrun.Runner, error) {
	if s.opts.Verify == nil {
		return nil, failure.New(failure.Unavailable, "the background verifier is not configured on this server")
	}
	return s.opts.Verify, nil
}

func (s *Server) evidencePage(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	if err := requireStatusScope(v.Principal); err != nil {
		return err
	}
	js, err := s.journalStatus()
	if err != nil {
		return err
	}
	ctx := r.Context()
	head, err := js.Head(ctx)
	if err != nil {
		return err
	}
	d := EvidenceData{JournalID: js.JournalID(), Origin: js.Origin(), KeyID: js.KeyID(), Head: head,
		HeadRoot: base64.StdEncoding.EncodeToString(head.Root), Unsigned: head.Size}
	cp, err := s.opts.Journal.Latest(ctx)
	switch {
	case err == nil:
		d.Checkpoint, d.CheckpointRoot = &cp, base64.StdEncoding.EncodeToString(cp.Root)
		d.Unsigned = head.Size - min(cp.Size, head.Size)
	case !failure.Is(err, failure.NotFound):
		return err
	}
	if requireVerifyScope(v.Principal) == nil {
		if run, err := s.verifier(); err == nil {
			st, _ := run.Watch()
			d.CanVerify, d.Verify = true, panel(st, v.CSRF)
		}
	}
	return s.render(w, r, http.StatusOK, "evidence", "Evidence", "evidence", d)
}

func panel(st verifyrun.State, csrf string) VerifyPanel {
	p := VerifyPanel{State: st, CSRF: csrf, Live: st.Phase == verifyrun.PhaseRunning}
	if st.Total > 0 {
		p.Percent = int(min(st.Done, st.Total) * 100 / st.Total)
	}
	if st.Report != nil {
		for _, k := range st.Report.Kinds() {
			p.Kinds = append(p.Kinds, KindTotal{Kind: k, Count: st.Report.Totals[k]})
		}
	}
	return p
}

// verifyStart starts a run; while one runs it starts nothing and the page
// shows the running one.
func (s *Server) verifyStart(w http.ResponseWriter, r *http.Request) error {
	if err := requireVerifyScope(viewerOf(r).Principal); err != nil {
		return err
	}
	run, err := s.verifier()
	if err != nil {
		return err
	}
	if _, err := run.Start(); err != nil && !failure.Is(err, failure.Conflict) {
		return err
	}
	http.Redirect(w, r, Prefix+"/evidence", http.StatusSeeOther)
	return nil
}

// verifyEvents streams the verify panel at every change of the run, until
// the run is not running (then "end").
func (s *Server) verifyEvents(w http.ResponseWriter, r *http.Request) error {
	v := viewerOf(r)
	if err := requireVerifyScope(v.Principal); err != nil {
		return err
	}
	run, err := s.verifier()
	if err != nil {
		return err
	}
	ctx, release, err := s.admitStream(r)
	if err != nil {
		return err
	}
	defer release()
	st, err := sse.Start(w)
	if err != nil {
		return nil
	}
	beat := time.NewTicker(sse.Heartbeat)
	defer beat.Stop()
	for {
		state, changed := run.Watch()
		var buf bytes.Buffer
		t, err := s.pageTemplate("evidence")
		if err == nil {
			err = t.ExecuteTemplate(&buf, "verify_panel", panel(state, v.CSRF))
		}
		if err != nil {
			s.log.Error("console: verify panel", "err", err)
			return nil
		}
		if st.Event("verify", buf.String()) != nil {
			return nil
		}
		if state.Phase != verifyrun.PhaseRunning {
			st.Event("end", string(state.Phase))
			return nil
		}
	wait:
		for {
			select {
			case <-changed:
				break wait
			case <-beat.C:
				if st.Comment() != nil {
					return nil
				}
			case <-ctx.Done():
				return nil
			}
		}
	}
}
