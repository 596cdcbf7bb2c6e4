package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/webcodex/webcodex/internal/failure"
)

// errRowTooLarge is what ledgerSource reports once a row passes
// MaxLedgerRowBytes.
var errRowTooLarge = errors.New("row too large")

// ledgerSource reads the ledger for the decoder, counting bytes and lines,
// and refuses to read past limit, so that the decoder's buffer (which must
// hold a whole row) never grows past MaxLedgerRowBytes and some read-ahead.
type ledgerSource struct {
	r     io.Reader
	n     int64 // bytes read
	lines int64 // newlines among them
	limit int64
}

func (s *ledgerSource) Read(p []byte) (int, error) {
	if s.n >= s.limit {
		return 0, errRowTooLarge
	}
	if room := s.limit - s.n; int64(len(p)) > room {
		p = p[:room]
	}
	k, err := s.r.Read(p)
	s.n += int64(k)
	s.lines += int64(bytes.Count(p[:k], newline))
	return k, err
}

var newline = []byte{'\n'}

// newlineCounter counts the newlines written to it.
type newlineCounter int64

func (c *newlineCounter) Write(p []byte) (int, error) {
	*c += newlineCounter(bytes.Count(p, newline))
	return len(p), nil
}

// A LedgerReader reads a version-2 ledger (docs/ledger-format.md) one row
// at a time: it holds at most one row, never the document. Use it through
// [ImportLedger], which makes the import all or nothing.
type LedgerReader struct {
	src *ledgerSource
	dec *json.Decoder
	// rowMax bounds one row's JSON text (MaxLedgerRowBytes).
	rowMax int64
	// opened is true once the document's '{' is read; seen counts the
	// top-level members read so far.
	opened  bool
	seen    map[string]int
	version *int
	// inRows is true between the '[' and ']' of sessions.
	inRows bool
	done   bool
	err    error
	// row is the 1-based index of the row last read, line the line on
	// which it begins (after is true when only the line it follows is
	// known), id its session_id when known.
	row   int
	line  int64
	after bool
	id    string
}

// NewLedgerReader returns a reader of the ledger r.
func NewLedgerReader(r io.Reader) *LedgerReader {
	src := &ledgerSource{r: r, limit: MaxLedgerRowBytes}
	return &LedgerReader{src: src, dec: json.NewDecoder(src), rowMax: MaxLedgerRowBytes, seen: map[string]int{}}
}

// Where names the row last read by Next: its line (1-based), its index
// among the ledger's sessions (1-based) and its session_id when known.
func (l *LedgerReader) Where() string {
	at := fmt.Sprintf("ledger line %d", l.line)
	if l.after {
		at = fmt.Sprintf("ledger row after line %d", l.line)
	}
	if l.id != "" {
		return fmt.Sprintf("%s (row %d, session %s)", at, l.row, l.id)
	}
	return fmt.Sprintf("%s (row %d)", at, l.row)
}

// Next returns the next row, checked as docs/ledger-format.md states and
// then redacted and bounded exactly as live writes store a session: the
// title as [Service.Start] derives it, every event by [Sanitize]. After the
// last row it reads and checks the rest of the document and returns io.EOF.
// Every other error is failure.InvalidLedger; one about a row names it
// ([LedgerReader.Where]). Errors are sticky.
func (l *LedgerReader) Next() (LedgerRow, error) {
	if l.err != nil {
		return LedgerRow{}, l.err
	}
	row, err := l.next()
	if err != nil {
		l.err = err
	}
	return row, err
}

func (l *LedgerReader) next() (LedgerRow, error) {
	if l.done {
		return LedgerRow{}, io.EOF
	}
	if !l.inRows {
		if err := l.readMembers(); err != nil {
			return LedgerRow{}, err
		}
		if l.done {
			return LedgerRow{}, io.EOF
		}
	}
	l.src.limit = l.dec.InputOffset() + l.rowMax
	if !l.dec.More() {
		if _, err := l.dec.Token(); err != nil { // the closing ']'
			return LedgerRow{}, l.syntax(err)
		}
		l.inRows = false
		return l.next()
	}
	l.row++
	l.id = ""
	l.line, l.after = l.lineAtOffset(), true
	l.src.limit = l.dec.InputOffset() + l.rowMax
	var raw json.RawMessage
	if err := l.dec.Decode(&raw); err != nil {
		if errors.Is(err, errRowTooLarge) {
			return LedgerRow{}, failure.New(failure.InvalidLedger, "%s: longer than %d bytes", l.Where(), l.rowMax)
		}
		return LedgerRow{}, failure.New(failure.InvalidLedger, "%s: not valid JSON: %v", l.Where(), err)
	}
	l.line, l.after = l.lineAtOffset()-int64(bytes.Count(raw, newline)), false
	row, err := parseRow(raw)
	l.id = row.ID
	if err != nil {
		return LedgerRow{}, l.rowError(err)
	}
	return row, nil
}

// rowError reports a row that failed its checks. While the document's
// version is not yet known (its "version" member follows "sessions"), the
// rest of the document is read first, so that a ledger of another version
// is reported as such rather than by the first row it cannot read.
func (l *LedgerReader) rowError(err error) error {
	rowErr := failure.New(failure.InvalidLedger, "%s: %v", l.Where(), err)
	if l.version != nil {
		return rowErr
	}
	for l.inRows {
		l.src.limit = l.dec.InputOffset() + l.rowMax
		if !l.dec.More() {
			if _, err := l.dec.Token(); err != nil {
				return rowErr
			}
			l.inRows = false
			break
		}
		var skip json.RawMessage
		if err := l.dec.Decode(&skip); err != nil {
			return rowErr
		}
	}
	if err := l.readMembers(); err != nil {
		return err // another version, or a document that is not a ledger
	}
	return rowErr
}

// lineAtOffset returns the line of the decoder's input offset.
func (l *LedgerReader) lineAtOffset() int64 {
	var ahead newlineCounter
	io.Copy(&ahead, l.dec.Buffered())
	return 1 + l.src.lines - int64(ahead)
}

func (l *LedgerReader) syntax(err error) error {
	if errors.Is(err, errRowTooLarge) {
		return failure.New(failure.InvalidLedger, "ledger member near line %d is longer than %d bytes", l.lineAtOffset(), l.rowMax)
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return failure.New(failure.InvalidLedger, "ledger is not valid JSON: %v", err)
}

// readMembers reads top-level members until the sessions array opens
// (inRows) or the document ends (done, after every check of the whole
// document).
func (l *LedgerReader) readMembers() error {
	if !l.opened {
		tok, err := l.dec.Token()
		if err != nil {
			return l.syntax(err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return failure.New(failure.InvalidLedger, "ledger is not a JSON object")
		}
		l.opened = true
	}
	for {
		l.src.limit = l.dec.InputOffset() + l.rowMax
		tok, err := l.dec.Token()
		if err != nil {
			return l.syntax(err)
		}
		if d, ok := tok.(json.Delim); ok && d == '}' {
			return l.end()
		}
		key, _ := tok.(string)
		if l.seen[key]++; l.seen[key] > 1 {
			return failure.New(failure.InvalidLedger, "ledger has member %q twice", key)
		}
		switch key {
		case "version":
			var v int
			if err := l.dec.Decode(&v); err != nil {
				return failure.New(failure.InvalidLedger, "ledger has no numeric version")
			}
			l.version = &v
			if v != LedgerVersion {
				return failure.New(failure.InvalidLedger, "ledger version %d is not supported: only version %d can be imported, and older ledgers are rejected rather than migrated", v, LedgerVersion)
			}
		case "kind":
			var kind string
			if err := l.dec.Decode(&kind); err != nil || kind != LedgerKind {
				return failure.New(failure.InvalidLedger, "ledger kind must be %q", LedgerKind)
			}
		case "exported_at":
			var at json.RawMessage
			if err := l.dec.Decode(&at); err != nil {
				return l.syntax(err)
			}
		case "sessions":
			tok, err := l.dec.Token()
			if err != nil {
				return l.syntax(err)
			}
			if d, ok := tok.(json.Delim); !ok || d != '[' {
				return failure.New(failure.InvalidLedger, "ledger sessions must be an array")
			}
			l.inRows = true
			return nil
		default:
			return failure.New(failure.InvalidLedger, "ledger has unknown top-level member %q", key)
		}
	}
}

// end checks the closed document: its required members and that nothing
// follows it.
func (l *LedgerReader) end() error {
	switch {
	case l.version == nil:
		return failure.New(failure.InvalidLedger, "ledger has no numeric version")
	case l.seen["kind"] == 0:
		return failure.New(failure.InvalidLedger, "ledger kind must be %q", LedgerKind)
	case l.seen["sessions"] == 0:
		return failure.New(failure.InvalidLedger, "ledger sessions must be an array")
	}
	if _, err := l.dec.Token(); err != io.EOF {
		return failure.New(failure.InvalidLedger, "ledger has data after its closing brace")
	}
	l.done = true
	return nil
}

// rowWire is a row as the ledger holds it: context_revision is accepted for
// read-only compatibility and never restored into live state.
type rowWire struct {
	Session
	Events          *[]Event        `json:"events"`
	ContextRevision json.RawMessage `json:"context_revision"`
	// Board is optional: a row exported before boards, or of a session
	// without messages, has none and is imported with an empty board.
	Board json.RawMessage `json:"board"`
}

// rowRequired are the members every row must have.
type rowRequired struct {
	ID               json.RawMessage `json:"session_id"`
	Project          json.RawMessage `json:"project"`
	Mode             json.RawMessage `json:"mode"`
	Lifecycle        json.RawMessage `json:"lifecycle"`
	OwnerFingerprint json.RawMessage `json:"owner_authority_fingerprint"`
	CreatedAt        json.RawMessage `json:"created_at"`
	UpdatedAt        json.RawMessage `json:"updated_at"`
	EventsObserved   json.RawMessage `json:"events_observed"`
}

// parseRow decodes and checks one row, then applies the redaction and
// bounds live writes apply. The returned row's ID is set whenever the row
// names one, even on error.
func parseRow(raw json.RawMessage) (LedgerRow, error) {
	var req rowRequired
	if err := json.Unmarshal(raw, &req); err != nil {
		return LedgerRow{}, fmt.Errorf("row is not an object")
	}
	var id LedgerRow
	json.Unmarshal(req.ID, &id.ID)
	var w rowWire
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return id, fmt.Errorf("row: %v", err)
	}
	for _, m := range []struct {
		name    string
		present bool
	}{
		{"session_id", req.ID != nil}, {"project", req.Project != nil}, {"mode", req.Mode != nil},
		{"lifecycle", req.Lifecycle != nil}, {"owner_authority_fingerprint", req.OwnerFingerprint != nil},
		{"created_at", req.CreatedAt != nil}, {"updated_at", req.UpdatedAt != nil},
		{"events_observed", req.EventsObserved != nil}, {"events", w.Events != nil},
	} {
		if !m.present {
			return id, fmt.Errorf("row: missing member %q", m.name)
		}
	}
	row := LedgerRow{Session: w.Session, Events: *w.Events}
	if err := checkRow(row); err != nil {
		return id, err
	}
	if len(w.Board) > 0 && string(w.Board) != "null" {
		b, err := restoreBoard(row.ID, w.Board)
		if err != nil {
			return id, err
		}
		row.Restored = b
	}
	row.Title = titleOf(row.Title)
	for i, e := range row.Events {
		row.Events[i] = Sanitize(e)
	}
	if row.Events == nil {
		row.Events = []Event{}
	}
	return row, nil
}

// checkRow checks a row's header, its events and that its header tells the
// truth about them.
func checkRow(row LedgerRow) error {
	if err := ValidateSession(row.Session); err != nil {
		return err
	}
	if len(row.Events) > TailLimit {
		return fmt.Errorf("events: more than %d", TailLimit)
	}
	var last int64
	for _, e := range row.Events {
		if err := ValidateEvent(e); err != nil {
			return fmt.Errorf("event %d: %v", e.Seq, err)
		}
		if e.Seq <= last || e.Seq > row.EventsObserved {
			return fmt.Errorf("event seq %d out of order or beyond events_observed", e.Seq)
		}
		last = e.Seq
	}
	// Seqs rise strictly within 1..events_observed, so the counts agree
	// exactly when every observed event is retained.
	switch n := int64(len(row.Events)); {
	case !row.RetentionTruncated && n != row.EventsObserved:
		return fmt.Errorf("events_observed is %d but %d events are retained and retention_truncated is false", row.EventsObserved, n)
	case row.RetentionTruncated && n == row.EventsObserved:
		return fmt.Errorf("retention_truncated is true but all %d observed events are retained", n)
	case row.EventsPurged > row.EventsObserved-n:
		return fmt.Errorf("events_purged is %d but only %d observed events are not retained", row.EventsPurged, row.EventsObserved-n)
	}
	return nil
}

// MaxReportedDiscards bounds the discarded message rows a [LedgerImport]
// lists (it counts them all).
const MaxReportedDiscards = 20

// A LedgerImport reports what an import stored.
type LedgerImport struct {
	Sessions int `json:"sessions"`
	// Messages counts the board messages imported; DiscardedMessages the
	// message rows left out because they could not prove their shape
	// (Discarded lists the first MaxReportedDiscards of them).
	Messages          int             `json:"messages"`
	DiscardedMessages int             `json:"discarded_messages"`
	Discarded         []LedgerDiscard `json:"discarded,omitempty"`
}

// A LedgerDiscard names one discarded message row.
type LedgerDiscard struct {
	// Where names the session's row (see [LedgerReader.Where]).
	Where string `json:"where"`
	DiscardedMessage
}

// ImportLedger is [ImportLedgerReport] returning only the number of
// sessions imported.
func ImportLedger(ctx context.Context, st Store, r io.Reader, known func(ctx context.Context, project string) error) (int, error) {
	rep, err := ImportLedgerReport(ctx, st, r, known)
	return rep.Sessions, err
}

// ImportLedgerReport imports the version-2 ledger read from r into st, all or
// nothing. The ledger is read one row at a time ([LedgerReader]); a row's
// project must be registered (known returns failure.UnknownProject for one
// that is not); st imports every row in one transaction, so the first error
// anywhere (a malformed row or document, an unregistered project, a session
// id that exists) leaves st unchanged. An error about a row names its line.
// A row's board is restored with a new generation; its message rows that
// cannot prove their shape are left out and reported, never the row.
// It reports how many sessions and messages were imported.
func ImportLedgerReport(ctx context.Context, st Store, r io.Reader, known func(ctx context.Context, project string) error) (LedgerImport, error) {
	lr := NewLedgerReader(r)
	registered := map[string]bool{}
	var yielded error
	var rep LedgerImport
	n, err := st.Import(ctx, func() (LedgerRow, error) {
		row, err := lr.Next()
		if err == nil && row.Restored != nil {
			rep.Messages += len(row.Restored.Messages)
			rep.DiscardedMessages += len(row.Restored.Discarded)
			for _, d := range row.Restored.Discarded {
				if len(rep.Discarded) < MaxReportedDiscards {
					rep.Discarded = append(rep.Discarded, LedgerDiscard{Where: lr.Where(), DiscardedMessage: d})
				}
			}
		}
		if err == nil && !registered[row.Project] {
			if err = known(ctx, row.Project); err == nil {
				registered[row.Project] = true
			} else if failure.Is(err, failure.UnknownProject) {
				err = failure.New(failure.UnknownProject, "%s: project %q is not registered in this data directory", lr.Where(), row.Project)
			}
		}
		yielded = err
		return row, err
	})
	var fe *failure.Error
	if err != nil && yielded == nil && errors.As(err, &fe) && (fe.Kind == failure.Conflict || fe.Kind == failure.InvalidLedger) {
		// The store refused the row last read (a session id that exists).
		return LedgerImport{}, failure.New(fe.Kind, "%s: %s", lr.Where(), fe.Message)
	}
	if err != nil {
		return LedgerImport{}, err
	}
	rep.Sessions = n
	return rep, nil
}
