// Package memory is Project Memory: a project's durable knowledge
// (conventions, decisions, pitfalls), a plane of its own beside Workflow
// Session continuity. Session events never create or change an entry;
// only the memory tools and the operator CLI do.
//
// # Identity
//
// An entry lives in a [Scope], keyed by the project id AND its canonical
// registered root: re-registering the same id to another root is another,
// empty scope. Within a scope:
//
//   - memory_key is the logical identity (1-[MaxKeyChars] characters);
//   - memory_id ("wc_mem_" + 32 hex) is the current incarnation: a key
//     deleted and created again, even with identical content, is a new
//     incarnation;
//   - definition_hash (internal) is the SHA-256 of the canonical content
//     (key, body, sorted tags) as stored, after redaction;
//   - revision ("mrev_<generation>_<24 hex>") is the generation-bound ETag
//     over (memory_id, generation, definition_hash) that compare-and-swap
//     names. Each content change increments the generation.
//
// # Compare-and-swap
//
// A set without expected_revision creates the key and fails with
// failure.RevisionConflict when it exists; with one it replaces the
// entry only while that is still its revision. A set whose content is
// identical to the current entry's changes nothing and succeeds
// (changed:false), so a retried set is idempotent. A delete names the
// current revision. A conflict carries the current revision in its
// detail. The store runs every decision inside one write transaction
// that no other writer of the scope can interleave with (SQLite's single
// writer; PostgreSQL's scope lock, across replicas), so of two racing
// writers with the same expected revision exactly one wins.
//
// Bodies and tags are redacted (internal/redact) before they are hashed
// or stored.
package memory

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/redact"
)

// Bounds (DESIGN.md §5). Each is checked by a test.
const (
	// MaxKeyChars bounds a memory_key, in characters.
	MaxKeyChars = 128
	// MaxBodyBytes bounds a body, in UTF-8 bytes (before redaction).
	MaxBodyBytes = 16 << 10
	// MaxBootstrapBytes bounds the serialized memory.bootstrap material.
	MaxBootstrapBytes = 16 << 10
	// MaxEntriesPerScope is the most live entries one scope holds; a set
	// creating one more fails with failure.MemoryScopeFull.
	MaxEntriesPerScope = 10000
	// MaxHistoryPerKey is the most revisions kept per incarnation (the
	// current one included); older ones are dropped as new ones are
	// written.
	MaxHistoryPerKey = 10
	// MaxTags bounds the tags of an entry, MaxTagChars each tag.
	MaxTags     = 16
	MaxTagChars = 64
	// DefaultSearchLimit and MaxSearchLimit bound memory_search results.
	DefaultSearchLimit = 10
	MaxSearchLimit     = 50
	// MaxQueryChars bounds a search query.
	MaxQueryChars = 512
	// MaxRevisionChars bounds a revision argument.
	MaxRevisionChars = 64
	// SnippetTokens is how many tokens a search snippet holds at most.
	SnippetTokens = 24
	// MaxScopeList bounds memory_scope_list.
	MaxScopeList = 200
	// MaxListEntries bounds one listing of a scope's entries (the CLI).
	MaxListEntries = 200
)

// PinnedTag is the tag that pins an entry: memory.bootstrap projects
// pinned entries first (newest first among them), then the others newest
// first.
const PinnedTag = "pinned"

// Scope is one memory scope: a project id at one canonical root.
type Scope struct {
	ID      string `json:"scope_id"`
	Project string `json:"project"`
	Root    string `json:"root"`
	// Entries and Bytes count the live entries and their body bytes
	// (filled by listings).
	Entries   int       `json:"entries"`
	Bytes     int64     `json:"body_bytes"`
	CreatedAt time.Time `json:"created_at"`
}

// scopeDomain separates scope ids from every other SHA-256 use.
const scopeDomain = "webcodex.memory-scope.v1"

// ScopeFor returns the scope of project id at its canonical registered
// root. Its ID is "wc_mscope_" + 32 hex of a domain-separated SHA-256
// over both, so another root is another scope.
func ScopeFor(projectID, root string) Scope {
	h := sha256.New()
	for _, f := range []string{scopeDomain, projectID, root} {
		writeField(h, f)
	}
	return Scope{ID: "wc_mscope_" + hex.EncodeToString(h.Sum(nil))[:32], Project: projectID, Root: root}
}

func writeField(h interface{ Write([]byte) (int, error) }, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// Entry is the current incarnation of a key.
type Entry struct {
	MemoryKey string    `json:"memory_key"`
	MemoryID  string    `json:"memory_id"`
	Revision  string    `json:"revision"`
	Body      string    `json:"body"`
	Tags      []string  `json:"tags"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// WrittenBy is the verified recorder session of the newest revision's
	// writer ("" when the call named none).
	WrittenBy string `json:"written_by_session,omitempty"`
	// Generation and DefinitionHash are internal identity.
	Generation     int64  `json:"-"`
	DefinitionHash string `json:"-"`
}

// Pinned reports whether e carries PinnedTag.
func (e Entry) Pinned() bool { return slices.Contains(e.Tags, PinnedTag) }

// Revision is one kept revision of an incarnation.
type Revision struct {
	Revision  string    `json:"revision"`
	Body      string    `json:"body"`
	Tags      []string  `json:"tags"`
	WrittenBy string    `json:"written_by_session,omitempty"`
	WrittenAt time.Time `json:"written_at"`
}

// Op is what a decided change does.
type Op int

// Ops.
const (
	OpNone Op = iota
	OpPut
	OpDelete
)

// Change is a decided change of one key: the entry as it is after it
// (for OpDelete, the entry removed).
type Change struct {
	Op      Op
	Entry   Entry
	Created bool
}

// Decide is the domain's decision over the current entry (nil when the
// key is absent) and, when it is absent, the scope's live entry count
// (0 otherwise); the store runs it inside its write transaction and
// applies the returned change.
type Decide func(cur *Entry, entries int) (Change, error)

// Hit is one search result.
type Hit struct {
	MemoryKey string    `json:"memory_key"`
	MemoryID  string    `json:"memory_id"`
	Revision  string    `json:"revision"`
	Tags      []string  `json:"tags"`
	Snippet   string    `json:"snippet"`
	Score     float64   `json:"score"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Query is a validated search.
type Query struct {
	Text  string
	Tags  []string
	Limit int
}

// Store persists scopes, entries and their history (memory/memorydb,
// memory/memorypg); memory/storetest is its contract suite.
type Store interface {
	// Apply runs decide over key's current entry in scope inside one write
	// transaction (creating the scope row if needed) and applies its
	// change: a put writes the entry, moving the revision it replaces into
	// the history (the entry and its history keep MaxHistoryPerKey
	// revisions together), a delete removes the entry and its history.
	Apply(ctx context.Context, scope Scope, key string, decide Decide) (Change, error)
	// Get returns key's entry in scope; ByID the incarnation memoryID.
	Get(ctx context.Context, scopeID, key string) (Entry, bool, error)
	ByID(ctx context.Context, scopeID, memoryID string) (Entry, bool, error)
	// History returns an incarnation's kept revisions, newest first: its
	// current revision, then the superseded ones (none when memoryID is
	// not a current incarnation).
	History(ctx context.Context, memoryID string) ([]Revision, error)
	// Search ranks scope's entries matching q.Text (FTS5 syntax) and
	// carrying every tag of q.Tags over key, tags and body, a key match
	// weighing most (BM25 on SQLite; ts_rank over the newest matches on
	// PostgreSQL, which refuses the FTS5 forms it cannot translate); it
	// returns up to q.Limit+1 hits, best first. Invalid syntax is
	// failure.InvalidArguments. Scores are comparable within one result
	// only.
	Search(ctx context.Context, scopeID string, q Query) ([]Hit, error)
	// Each calls fn with scope's entries, pinned first, then newest first,
	// until fn returns false.
	Each(ctx context.Context, scopeID string, fn func(Entry) bool) error
	// Count returns scope's live entry count.
	Count(ctx context.Context, scopeID string) (int, error)
	// Scopes lists up to limit scopes with their counts; Purge removes a
	// scope and everything in it, returning the entries removed.
	Scopes(ctx context.Context, limit int) ([]Scope, error)
	Purge(ctx context.Context, scopeID string) (int, error)
}

// Service is the memory domain over a Store.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns the service over store; now nil is time.Now.
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// SetParams is one memory_set.
type SetParams struct {
	Scope            Scope
	Key              string
	Body             string
	Tags             []string
	ExpectedRevision string
	// Writer is the verified recorder session ("" without one).
	Writer string
}

// SetResult is the outcome of a set.
type SetResult struct {
	Entry   Entry
	Changed bool
	Created bool
	// Redacted reports whether redaction changed the body or tags.
	Redacted bool
}

// Set writes an entry under compare-and-swap (see the package comment).
func (s *Service) Set(ctx context.Context, p SetParams) (SetResult, error) {
	if err := ValidateKey(p.Key); err != nil {
		return SetResult{}, err
	}
	if p.Body == "" {
		return SetResult{}, failure.New(failure.InvalidArguments, "body must not be empty")
	}
	if len(p.Body) > MaxBodyBytes {
		return SetResult{}, failure.New(failure.InvalidArguments, "body is %d bytes, over the bound of %d", len(p.Body), MaxBodyBytes).
			WithDetail("max_body_bytes", MaxBodyBytes)
	}
	if !utf8.ValidString(p.Body) {
		return SetResult{}, failure.New(failure.InvalidArguments, "body must be valid UTF-8")
	}
	tags, err := canonicalTags(p.Tags)
	if err != nil {
		return SetResult{}, err
	}
	if p.ExpectedRevision != "" {
		if _, err := ParseRevision(p.ExpectedRevision); err != nil {
			return SetResult{}, err
		}
	}
	body := redact.String(p.Body)
	redacted := body != p.Body
	for i, t := range tags {
		if r := redact.String(t); r != t {
			tags[i], redacted = r, true
		}
	}
	hash := definitionHash(p.Key, body, tags)
	now := s.now().UTC()
	ch, err := s.store.Apply(ctx, p.Scope, p.Key, func(cur *Entry, entries int) (Change, error) {
		if cur != nil && cur.DefinitionHash == hash {
			return Change{Op: OpNone, Entry: *cur}, nil // identical: idempotent
		}
		if cur == nil {
			if p.ExpectedRevision != "" {
				return Change{}, conflict(nil, "memory_key %q does not exist (it was deleted or never set); set it without expected_revision", p.Key)
			}
			if entries >= MaxEntriesPerScope {
				return Change{}, failure.New(failure.MemoryScopeFull, "the project's memory holds %d entries, the bound; delete one first", entries).
					WithDetail("max_entries", MaxEntriesPerScope)
			}
			id := newMemoryID()
			e := Entry{MemoryKey: p.Key, MemoryID: id, Body: body, Tags: tags, CreatedAt: now, UpdatedAt: now,
				WrittenBy: p.Writer, Generation: 1, DefinitionHash: hash}
			e.Revision = revisionOf(id, 1, hash)
			return Change{Op: OpPut, Entry: e, Created: true}, nil
		}
		if p.ExpectedRevision == "" {
			return Change{}, conflict(cur, "memory_key %q exists; pass its current revision as expected_revision to replace it", p.Key)
		}
		if p.ExpectedRevision != cur.Revision {
			return Change{}, conflict(cur, "expected_revision is stale: memory_key %q is at another revision", p.Key)
		}
		e := *cur
		e.Body, e.Tags, e.UpdatedAt, e.WrittenBy = body, tags, now, p.Writer
		e.Generation++
		e.DefinitionHash = hash
		e.Revision = revisionOf(e.MemoryID, e.Generation, hash)
		return Change{Op: OpPut, Entry: e}, nil
	})
	if err != nil {
		return SetResult{}, err
	}
	return SetResult{Entry: ch.Entry, Changed: ch.Op == OpPut, Created: ch.Created, Redacted: redacted}, nil
}

// Delete removes key's current incarnation when expectedRevision is its
// revision; an absent key is failure.UnknownMemory.
func (s *Service) Delete(ctx context.Context, scope Scope, key, expectedRevision string) (Entry, error) {
	if err := ValidateKey(key); err != nil {
		return Entry{}, err
	}
	if expectedRevision == "" {
		return Entry{}, failure.New(failure.InvalidArguments, "expected_revision is required")
	}
	if _, err := ParseRevision(expectedRevision); err != nil {
		return Entry{}, err
	}
	ch, err := s.store.Apply(ctx, scope, key, func(cur *Entry, _ int) (Change, error) {
		if cur == nil {
			return Change{}, failure.New(failure.UnknownMemory, "no memory entry has memory_key %q", key)
		}
		if cur.Revision != expectedRevision {
			return Change{}, conflict(cur, "expected_revision is stale: memory_key %q is at another revision", key)
		}
		return Change{Op: OpDelete, Entry: *cur}, nil
	})
	return ch.Entry, err
}

// ReadParams names one entry by key or by memory_id (exactly one).
type ReadParams struct {
	Scope       Scope
	Key         string
	MemoryID    string
	WithHistory bool
}

// Read returns an entry and, when asked, its kept revisions (newest
// first). An absent key or a memory_id that is not the current
// incarnation is failure.UnknownMemory.
func (s *Service) Read(ctx context.Context, p ReadParams) (Entry, []Revision, error) {
	if (p.Key == "") == (p.MemoryID == "") {
		return Entry{}, nil, failure.New(failure.InvalidArguments, "give exactly one of memory_key and memory_id")
	}
	var (
		e   Entry
		ok  bool
		err error
	)
	if p.Key != "" {
		if err := ValidateKey(p.Key); err != nil {
			return Entry{}, nil, err
		}
		e, ok, err = s.store.Get(ctx, p.Scope.ID, p.Key)
	} else {
		if !memoryIDRE.MatchString(p.MemoryID) {
			return Entry{}, nil, failure.New(failure.InvalidArguments, "memory_id must be wc_mem_ and 32 lowercase hex digits")
		}
		e, ok, err = s.store.ByID(ctx, p.Scope.ID, p.MemoryID)
	}
	if err != nil {
		return Entry{}, nil, err
	}
	if !ok {
		return Entry{}, nil, failure.New(failure.UnknownMemory, "no current memory entry has that memory_key or memory_id")
	}
	if !p.WithHistory {
		return e, nil, nil
	}
	h, err := s.store.History(ctx, e.MemoryID)
	return e, h, err
}

// SearchParams is one memory_search.
type SearchParams struct {
	Scope Scope
	Query string
	Tags  []string
	Limit int
}

// Search returns the best-ranked entries (BM25) and whether more matched.
func (s *Service) Search(ctx context.Context, p SearchParams) ([]Hit, bool, error) {
	q := strings.TrimSpace(p.Query)
	if q == "" {
		return nil, false, failure.New(failure.InvalidArguments, "query must not be empty")
	}
	if utf8.RuneCountInString(q) > MaxQueryChars {
		return nil, false, failure.New(failure.InvalidArguments, "query is over %d characters", MaxQueryChars)
	}
	limit := p.Limit
	switch {
	case limit == 0:
		limit = DefaultSearchLimit
	case limit < 0 || limit > MaxSearchLimit:
		return nil, false, failure.New(failure.InvalidArguments, "limit must be 1-%d", MaxSearchLimit)
	}
	tags, err := canonicalTags(p.Tags)
	if err != nil {
		return nil, false, err
	}
	hits, err := s.store.Search(ctx, p.Scope.ID, Query{Text: q, Tags: tags, Limit: limit})
	if err != nil {
		return nil, false, err
	}
	more := len(hits) > limit
	if more {
		hits = hits[:limit]
	}
	return hits, more, nil
}

// List returns up to limit (at most MaxListEntries) of scope's entries,
// pinned first, then newest first, and the scope's entry count.
func (s *Service) List(ctx context.Context, scope Scope, limit int) ([]Entry, int, error) {
	if limit <= 0 || limit > MaxListEntries {
		limit = MaxListEntries
	}
	var out []Entry
	err := s.store.Each(ctx, scope.ID, func(e Entry) bool {
		out = append(out, e)
		return len(out) < limit
	})
	if err != nil {
		return nil, 0, err
	}
	n, err := s.store.Count(ctx, scope.ID)
	return out, n, err
}

// Scopes lists up to MaxScopeList scopes with their counts.
func (s *Service) Scopes(ctx context.Context) ([]Scope, error) {
	return s.store.Scopes(ctx, MaxScopeList)
}

// Purge removes scope id and every entry in it; an unknown id is
// failure.UnknownMemory.
func (s *Service) Purge(ctx context.Context, scopeID string) (int, error) {
	if !scopeIDRE.MatchString(scopeID) {
		return 0, failure.New(failure.InvalidArguments, "scope_id must be wc_mscope_ and 32 lowercase hex digits")
	}
	return s.store.Purge(ctx, scopeID)
}

// conflict is failure.RevisionConflict carrying the current revision
// (null when the key is absent).
func conflict(cur *Entry, format string, args ...any) error {
	e := failure.New(failure.RevisionConflict, format, args...)
	if cur == nil {
		return e.WithDetail("current_revision", nil)
	}
	return e.WithDetail("current_revision", cur.Revision).WithDetail("memory_id", cur.MemoryID)
}

var (
	memoryIDRE = regexp.MustCompile(`^wc_mem_[0-9a-f]{32}$`)
	scopeIDRE  = regexp.MustCompile(`^wc_mscope_[0-9a-f]{32}$`)
	revisionRE = regexp.MustCompile(`^mrev_([1-9][0-9]{0,17})_[0-9a-f]{24}$`)
	tagRE      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)
)

// ParseRevision checks a revision's form and returns its generation;
// anything else is failure.InvalidRevision.
func ParseRevision(r string) (int64, error) {
	if len(r) > MaxRevisionChars {
		return 0, failure.New(failure.InvalidRevision, "revision is over %d characters", MaxRevisionChars)
	}
	m := revisionRE.FindStringSubmatch(r)
	if m == nil {
		return 0, failure.New(failure.InvalidRevision, "revision must be a revision returned by memory_set or memory_read (mrev_<generation>_<hex>)")
	}
	g, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, failure.New(failure.InvalidRevision, "revision generation is out of range")
	}
	return g, nil
}

// ValidateKey checks a memory_key: 1-MaxKeyChars characters, valid
// UTF-8, no control characters, not blank, and not a credential (a key is
// identity and is never redacted).
func ValidateKey(k string) error {
	n := utf8.RuneCountInString(k)
	switch {
	case k == "" || strings.TrimSpace(k) == "":
		return failure.New(failure.InvalidArguments, "memory_key must not be empty")
	case n > MaxKeyChars:
		return failure.New(failure.InvalidArguments, "memory_key is %d characters, over the bound of %d", n, MaxKeyChars).
			WithDetail("max_key_chars", MaxKeyChars)
	case !utf8.ValidString(k) || strings.IndexFunc(k, unicode.IsControl) >= 0:
		return failure.New(failure.InvalidArguments, "memory_key must be printable UTF-8")
	case redact.String(k) != k:
		return failure.New(failure.InvalidArguments, "memory_key looks like it holds a credential; keys are never redacted, so it is refused")
	}
	return nil
}

// canonicalTags validates tags and returns them sorted without
// duplicates.
func canonicalTags(tags []string) ([]string, error) {
	if len(tags) > MaxTags {
		return nil, failure.New(failure.InvalidArguments, "at most %d tags", MaxTags)
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if len(t) > MaxTagChars || !tagRE.MatchString(t) {
			return nil, failure.New(failure.InvalidArguments, "tag %q must be 1-%d characters of letters, digits, '.', '_', ':', '/' or '-'", redact.Bounded(t, MaxTagChars), MaxTagChars)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// hashDomain separates definition hashes from every other SHA-256 use.
const hashDomain = "webcodex.memory-definition.v1"

// definitionHash is the hex SHA-256 of the canonical content.
func definitionHash(key, body string, tags []string) string {
	h := sha256.New()
	writeField(h, hashDomain)
	writeField(h, key)
	writeField(h, body)
	writeField(h, strconv.Itoa(len(tags)))
	for _, t := range tags {
		writeField(h, t)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// revisionOf is the generation-bound ETag of an incarnation's state.
func revisionOf(memoryID string, generation int64, hash string) string {
	h := sha256.New()
	writeField(h, "webcodex.memory-revision.v1")
	writeField(h, memoryID)
	writeField(h, strconv.FormatInt(generation, 10))
	writeField(h, hash)
	return "mrev_" + strconv.FormatInt(generation, 10) + "_" + hex.EncodeToString(h.Sum(nil))[:24]
}

func newMemoryID() string {
	var b [16]byte
	rand.Read(b[:])
	return "wc_mem_" + hex.EncodeToString(b[:])
}

// TagsRecord is tags as both stores keep them: a JSON array ("[]" for
// none).
func TagsRecord(tags []string) string {
	if tags == nil {
		tags = []string{}
	}
	b, _ := json.Marshal(tags)
	return string(b)
}

// ParseTagsRecord reads a TagsRecord.
func ParseTagsRecord(rec string) ([]string, error) {
	var tags []string
	if err := json.Unmarshal([]byte(rec), &tags); err != nil {
		return nil, fmt.Errorf("memory tags record: %w", err)
	}
	return tags, nil
}
