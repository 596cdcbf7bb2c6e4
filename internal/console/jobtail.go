package console

import (
	"bytes"
	"context"
	"net/http"

	"github.com/webcodex/webcodex/internal/console/sse"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/jobs"
)

// The job live tail: GET /console/sessions/{id}/jobs/{job}/tail streams a
// job's output and state as server-sent events, read with the same
// jobs.Manager.Observe loop observe_jobs uses (wake on change, byte
// cursors), so the page shows exactly what the job stored. Events:
//
//	reset   the stream starts over (the browser empties the output)
//	state   the job's status line, rendered HTML (template "job_state",
//	        templates/partials/live.html)
//	row     the cells of the job's row in the jobs list above the tail,
//	        rendered HTML (template "job_row", partials/sections.html),
//	        sent with every state, so the row never keeps a stale state
//	stdout  new stdout text (the browser appends it as text, never as markup)
//	stderr  new stderr text
//	end     the job is terminal and its output was sent; the browser closes
//
// The job must be one of the session's (its run or recording session) and
// the session the viewer's; anything else is 404. The stream is bounded by
// the console's sse.Limiter.
func init() {
	funcs["jobSession"] = jobSession
	extraRouteFuncs = append(extraRouteFuncs, func(s *Server) {
		s.handle("GET "+Prefix+"/sessions/{id}/jobs/{job}/tail", s.page(s.jobTail))
	})
}

// Tail bounds.
const (
	// TailWait is one observe wait; after a quiet one the stream writes a
	// heartbeat and observes again.
	TailWait = sse.Heartbeat
	// TailChunkBytes bounds one output event per stream.
	TailChunkBytes = 16 << 10
	// TailFirstBytes is how much of each stream's end the first events
	// carry (a tail, not the whole file).
	TailFirstBytes = 16 << 10
)

func (s *Server) jobTail(w http.ResponseWriter, r *http.Request) error {
	p := viewerOf(r).Principal
	sess, err := s.authorize(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if s.opts.Jobs == nil {
		return failure.New(failure.Unavailable, "jobs are not configured on this server")
	}
	acc := jobs.Access{Project: sess.Project, Fingerprint: p.AuthorityFingerprint()}
	j, err := s.opts.Jobs.Get(r.Context(), acc, r.PathValue("job"))
	if err != nil || !j.InSession(sess.ID) {
		// Another group's, another project's, another session's or no
		// job: one answer, so that existence does not leak.
		return failure.New(failure.NotFound, "no job %q in this session", r.PathValue("job"))
	}
	ctx, release, err := s.admitStream(r)
	if err != nil {
		return err
	}
	defer release()
	st, err := sse.Start(w)
	if err != nil || st.Event("reset", "") != nil {
		return nil // the client is gone
	}
	var cur jobs.Cursors
	first := true
	state := jobs.State("")
	for {
		req := jobs.ObserveRequest{IDs: []string{j.ID}, Wait: TailWait, WakeOn: jobs.WakeChange, MaxBytes: TailChunkBytes}
		if first {
			req.Wait, req.MaxBytes = 0, TailFirstBytes
		} else {
			req.Cursors = map[string]jobs.Cursors{j.ID: cur}
		}
		obs, woke, err := s.opts.Jobs.Observe(ctx, acc, req)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("console: job tail", "job", j.ID, "err", err)
				st.Event("end", failure.MessageOf(err))
			}
			return nil
		}
		o, sent := obs[0], false
		if first || o.Job.State != state {
			for _, ev := range [...]string{"state", "row"} {
				var buf bytes.Buffer
				t, err := s.pageTemplate("session")
				if err == nil {
					err = t.ExecuteTemplate(&buf, "job_"+ev, o.Job)
				}
				if err != nil {
					s.log.Error("console: job fragment", "fragment", ev, "err", err)
					return nil
				}
				if st.Event(ev, buf.String()) != nil {
					return nil
				}
			}
			state, sent = o.Job.State, true
		}
		for _, c := range []struct {
			name  string
			chunk jobs.Chunk
			next  **int64
		}{{"stdout", o.Stdout, &cur.Stdout}, {"stderr", o.Stderr, &cur.Stderr}} {
			if c.chunk.Text != "" {
				if st.Event(c.name, c.chunk.Text) != nil {
					return nil
				}
				sent = true
			}
			n := c.chunk.NextCursor
			*c.next = &n
		}
		first = false
		if o.Job.State.Terminal() && !o.Stdout.More && !o.Stderr.More {
			st.Event("end", string(o.Job.State))
			return nil
		}
		if woke == jobs.WokeShutdown {
			// The jobs manager is closing: nothing more will be observed.
			st.Event("end", "server shutdown")
			return nil
		}
		if !sent && st.Comment() != nil {
			return nil // a heartbeat after a quiet wait; the client is gone
		}
	}
}

// jobSession is a session j is in (InSession): the one it ran in, else
// the first its validation evidence is recorded in; "" for neither.
func jobSession(j jobs.Job) string {
	if j.SessionID != "" {
		return j.SessionID
	}
	if j.Validation != nil && len(j.Validation.Sessions) > 0 {
		return j.Validation.Sessions[0]
	}
	return ""
}

// admitStream admits a live stream of r's console session under the
// console's sse.Limiter (its bounds answer 429 beyond them) and then gives
// back the public request slot r holds (httpserver.ReleasePublicSlot): an
// admitted stream holds one of the limiter's slots for its life, not one
// of the MaxPublic request slots sign-in and every page need. The
// returned context and release are the limiter's.
func (s *Server) admitStream(r *http.Request) (context.Context, func(), error) {
	if s.opts.Streams == nil {
		return nil, nil, failure.New(failure.Unavailable, "live streams are not configured on this server")
	}
	ctx, release, err := s.opts.Streams.Acquire(r.Context(), viewerOf(r).CSRF)
	if err != nil {
		return nil, nil, err
	}
	httpserver.ReleasePublicSlot(r)
	return ctx, release, nil
}
