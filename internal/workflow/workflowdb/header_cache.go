package workflowdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

func getHeader(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string) (workflow.Session, int64, error) {
	return scanHeader(q.QueryRowContext(ctx, sqlHeader, id), id)
}

func scanHeader(row *sql.Row, id string) (workflow.Session, int64, error) {
	return scanHeaderWith(nil, row, id)
}

// decodedHeader is a header as stored, its decoded, validated value, and
// the retained count stored beside it when it was read or written.
type decodedHeader struct {
	json     string
	sess     workflow.Session
	retained int64
}

// scanHeader reads a header row, decoding its JSON only when it differs
// from the bytes this session's header was last decoded from: a call
// reads the same header for its claim check and its started append.
func (s *Store) scanHeader(row *sql.Row, id string) (workflow.Session, int64, error) {
	return scanHeaderWith(&s.headers, row, id)
}

func scanHeaderWith(cache *sync.Map, row *sql.Row, id string) (workflow.Session, int64, error) {
	var hdr string
	var retained int64
	err := row.Scan(&hdr, &retained)
	if errors.Is(err, sql.ErrNoRows) {
		return workflow.Session{}, 0, failure.New(failure.UnknownSessionID, "no Workflow Session %s exists", id)
	}
	if err != nil {
		return workflow.Session{}, 0, err
	}
	if cache != nil {
		if v, ok := cache.Load(id); ok && v.(*decodedHeader).json == hdr {
			d := v.(*decodedHeader)
			if d.retained != retained {
				cache.Store(id, &decodedHeader{json: d.json, sess: d.sess, retained: retained})
			}
			return copySession(d.sess), retained, nil
		}
	}
	sess, err := workflowrow.DecodeHeader([]byte(hdr))
	if err != nil {
		// The first-use check moved malformed headers aside; one appearing
		// later is a store fault, not a caller error.
		return workflow.Session{}, 0, fmt.Errorf("session %s: %v", id, err)
	}
	if cache != nil {
		cache.Store(id, &decodedHeader{json: hdr, sess: copySession(sess), retained: retained})
	}
	return sess, retained, nil
}

// rememberHeader caches sess as the decoding of hdr, its encoding just
// written with retained, so the next read of this header (the next call's
// claim check) need not decode it again and the next AppendCall need not
// read it (see appendKnown). The cache is keyed by the
// exact bytes, so a write that is rolled back leaves an entry no stored
// header matches: a miss, never a wrong session. A session whose decoding
// would differ from it (see asDecoded) or that would fail decodeHeader's
// validation is not cached: its next read decodes it.
func (s *Store) rememberHeader(id, hdr string, sess workflow.Session, retained int64) {
	d, ok := asDecoded(sess)
	if !ok || workflow.ValidateSession(sess) != nil {
		s.headers.Delete(id)
		return
	}
	s.headers.Store(id, &decodedHeader{json: hdr, sess: d, retained: retained})
}

// asDecoded is what decodeHeader returns from workflowrow.EncodeHeader(sess), sharing
// nothing with sess, and true; false when that is not known without
// decoding. JSON keeps an instant and its offset but not its Location, and
// replaces invalid UTF-8, so only times in UTC and valid strings qualify;
// the monotonic reading is dropped, and an empty job marker list (omitted
// when empty) decodes as nil.
func asDecoded(sess workflow.Session) (workflow.Session, bool) {
	utc := func(t time.Time) bool { return t.Location() == time.UTC }
	if !utc(sess.CreatedAt) || !utc(sess.UpdatedAt) || (sess.ClosedAt != nil && !utc(*sess.ClosedAt)) {
		return workflow.Session{}, false
	}
	for _, v := range [...]string{sess.ID, sess.Project, sess.Title, string(sess.Mode), string(sess.Lifecycle),
		sess.OwnerFingerprint, sess.ExecutionContext.DefaultCwd, string(sess.ExecutionContext.DefaultShell), sess.ExecutionContext.Resource} {
		if !utf8.ValidString(v) {
			return workflow.Session{}, false
		}
	}
	for _, v := range sess.JobMarkers {
		if !utf8.ValidString(v) {
			return workflow.Session{}, false
		}
	}
	sess = copySession(sess)
	sess.CreatedAt, sess.UpdatedAt = sess.CreatedAt.UTC(), sess.UpdatedAt.UTC()
	if sess.ClosedAt != nil {
		*sess.ClosedAt = sess.ClosedAt.UTC()
	}
	if len(sess.JobMarkers) == 0 {
		sess.JobMarkers = nil
	}
	return sess, true
}

// copySession is s with nothing shared with the original (the header
// cache's copy is never changed through a caller's).
func copySession(s workflow.Session) workflow.Session {
	s.JobMarkers = slices.Clone(s.JobMarkers)
	if s.ClosedAt != nil {
		t := *s.ClosedAt
		s.ClosedAt = &t
	}
	return s
}
