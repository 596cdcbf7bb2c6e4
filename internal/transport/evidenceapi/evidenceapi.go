// Package evidenceapi serves the evidence journal records of one Workflow
// Session over HTTP:
//
//	GET /api/evidence/sessions/{id}?limit=N
//	→ {session_id, counts, records, returned, checkpoint, proves}
//
// Records are those whose claimed (recording or business) or verified
// session is id, newest first (limit default 50, max 500), each with its
// leaf index and hash so that it can be checked against a checkpoint. The
// caller needs project:read and must belong to the session's authority
// group (and, when bound to one project, reach the session's project);
// account:manage reaches any id, including ids the session store does not
// know (forged claims are negative evidence too).
package evidenceapi

import (
	"context"
	"encoding/hex"
	"net/http"
	"strconv"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// Journal is the evidence journal as the API reads it.
type Journal interface {
	SessionRecords(ctx context.Context, sessionID string, limit int) ([]evidence.Entry, error)
	SessionCounts(ctx context.Context, sessionID string) (evidence.Counts, error)
	Latest(ctx context.Context) (evidence.SignedCheckpoint, error)
}

// API is the evidence read route.
type API struct {
	Journal  Journal
	Sessions *workflow.Service
	// Projects resolves a project as the caller may see it (the kernel's
	// resolver): a caller bound to one project (auth.Principal.Project)
	// reads only sessions whose project it resolves. Nil: such a caller
	// reads only sessions of exactly its project.
	Projects interface {
		Get(ctx context.Context, id string) (project.Project, error)
	}
}

// Record is one listed record.
type Record struct {
	Index    uint64          `json:"index"`
	LeafHash string          `json:"leaf_hash"`
	Record   evidence.Record `json:"record"`
	// Purged: retention dropped the record's payload; Record holds only
	// the identifiers the journal keeps (evidence.Entry.Purged;
	// docs/decisions/0086-evidence-payload-purge.md).
	Purged bool `json:"purged,omitempty"`
}

// Response is the body of GET /api/evidence/sessions/{id}.
type Response struct {
	SessionID string          `json:"session_id"`
	Counts    evidence.Counts `json:"counts"`
	Records   []Record        `json:"records"`
	Returned  int             `json:"returned"`
	// Checkpoint is the newest signed head (null before the first).
	Checkpoint *evidence.SignedCheckpoint `json:"checkpoint"`
	Proves     string                     `json:"proves"`
}

// Register adds the route to mux.
func (a *API) Register(mux *httpserver.Mux) {
	mux.Authenticated("GET /api/evidence/sessions/{id}", http.HandlerFunc(a.session))
}

func (a *API) session(w http.ResponseWriter, r *http.Request) {
	if err := a.serve(w, r); err != nil {
		httpserver.WriteError(w, httpserver.StatusFor(failure.KindOf(err)), err)
	}
}

func (a *API) serve(w http.ResponseWriter, r *http.Request) error {
	ctx, id := r.Context(), r.PathValue("id")
	p, _ := auth.PrincipalFrom(ctx)
	if !p.Has(auth.ScopeProjectRead) {
		httpserver.WriteInsufficientScope(w, r, []auth.Scope{auth.ScopeProjectRead}, failure.New(failure.InsufficientScope, "reading evidence requires %s", auth.ScopeProjectRead))
		return nil
	}
	if err := a.authorize(ctx, p, id); err != nil {
		return err
	}
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return failure.New(failure.InvalidArguments, "limit must be a number")
		}
		limit = n
	}
	entries, err := a.Journal.SessionRecords(ctx, id, limit)
	if err != nil {
		return err
	}
	counts, err := a.Journal.SessionCounts(ctx, id)
	if err != nil {
		return err
	}
	out := Response{SessionID: id, Counts: counts, Records: make([]Record, len(entries)), Returned: len(entries),
		Proves: handoff.EvidenceProves}
	for i, e := range entries {
		out.Records[i] = Record{Index: e.Index, LeafHash: hex.EncodeToString(e.LeafHash), Record: e.Record, Purged: e.Purged}
	}
	if cp, err := a.Journal.Latest(ctx); err == nil {
		out.Checkpoint = &cp
	} else if !failure.Is(err, failure.NotFound) {
		return err
	}
	httpserver.WriteJSON(w, http.StatusOK, out)
	return nil
}

// authorize lets the session's authority group and account managers read
// its records; a session the store does not know is for managers only.
func (a *API) authorize(ctx context.Context, p auth.Principal, id string) error {
	if p.Has(auth.ScopeAccountManage) {
		return nil
	}
	sess, err := a.Sessions.Get(ctx, id)
	if failure.Is(err, failure.UnknownSessionID) || err == nil && (sess.OwnerFingerprint != p.AuthorityFingerprint() || !a.reaches(ctx, p, sess.Project)) {
		// The same answer for unknown and foreign ids: no existence oracle.
		return failure.New(failure.UnknownSessionID, "no session %q in your authority group", id)
	}
	return err
}

// reaches reports whether p may read a session of project id: any, unless
// p is bound to one project.
func (a *API) reaches(ctx context.Context, p auth.Principal, id string) bool {
	if p.Project == "" {
		return true
	}
	if a.Projects == nil {
		return id == p.Project
	}
	_, err := a.Projects.Get(ctx, id)
	return err == nil
}
