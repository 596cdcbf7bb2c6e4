// Package agenttask is the Agent Task domain (wc_task_ ids) and its leased
// attempts (wc_attempt_ ids): durable work of an authority group on a
// project that outlives any one Workflow Session, claimed by one session
// at a time through an attempt with a lease and a fencing token.
//
// A task's state is open → claimed → done | failed | cancelled. Only an
// attempt (start, complete, lease expiry) or a cancel changes it; an
// update changes title, body, labels and priority under a
// compare-and-swap revision. depends_on is immutable: it is fixed at
// creation and may name only tasks that already exist, so a dependency
// cycle cannot be formed. A task grants nothing: the caller has already
// authorized the session it passes in. Every committed change of a task
// advances its owner's project change feed, which [Service.Events] reads
// after an authenticated cursor (decision 0078). The package reads no
// session store and imports no transport.
package agenttask

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// Id prefixes: a task id is wc_task_ + 32 lowercase hex, an attempt id
// wc_attempt_ + 32 lowercase hex.
const (
	TaskIDPrefix    = "wc_task_"
	AttemptIDPrefix = "wc_attempt_"
)

// Bounds.
const (
	// TitleMaxChars bounds a task's title (1-200 characters).
	TitleMaxChars = 200
	// BodyMaxChars bounds a task's body.
	BodyMaxChars = 8000
	// MaxLabels bounds a task's labels, LabelMaxChars one label (1-64).
	MaxLabels     = 16
	LabelMaxChars = 64
	// MinPriority and MaxPriority bound a task's priority (higher first).
	MinPriority = -1000
	MaxPriority = 1000
	// MaxDependsOn bounds a task's dependencies.
	MaxDependsOn = 32
	// IdempotencyKeyMaxChars bounds an idempotency or completion key.
	IdempotencyKeyMaxChars = 128
	// SummaryMaxChars bounds an attempt's completion summary.
	SummaryMaxChars = 4000
	// DefaultLease is an attempt's lease when the caller names none;
	// MinLease and MaxLease bound a named one.
	DefaultLease = 5 * time.Minute
	MinLease     = 10 * time.Second
	MaxLease     = time.Hour
	// ListDefault and ListMax bound a list page.
	ListDefault = 20
	ListMax     = 100
	// NextScanMax bounds the ready tasks StartNextAttempt tries in one
	// call (each is judged again under its lock; a lost race moves on).
	NextScanMax = 16
	// ExpireBatchMax bounds the lapsed attempts one Expire call expires.
	ExpireBatchMax = 100
)

// State is a task's lifecycle state.
type State string

// Task states.
const (
	Open      State = "open"
	Claimed   State = "claimed"
	Done      State = "done"
	Failed    State = "failed"
	Cancelled State = "cancelled"
)

// Valid reports whether s is a known task state.
func (s State) Valid() bool {
	switch s {
	case Open, Claimed, Done, Failed, Cancelled:
		return true
	}
	return false
}

// Finished reports whether s is terminal (done, failed or cancelled).
func (s State) Finished() bool { return s == Done || s == Failed || s == Cancelled }

// AttemptState is an attempt's lifecycle state: live, then exactly one of
// the others, never again live.
type AttemptState string

// Attempt states.
const (
	Live             AttemptState = "live"
	AttemptDone      AttemptState = "done"
	AttemptFailed    AttemptState = "failed"
	AttemptExpired   AttemptState = "expired"
	AttemptCancelled AttemptState = "cancelled"
)

// Outcome is what a completion reports: done or failed.
type Outcome string

// Outcomes.
const (
	OutcomeDone   Outcome = "done"
	OutcomeFailed Outcome = "failed"
)

// A Task is one stored Agent Task.
type Task struct {
	ID string `json:"task_id"`
	// Owner is the authority-group fingerprint of the creator: a task of
	// another owner is indistinguishable from an unknown one.
	Owner     string   `json:"-"`
	Project   string   `json:"project"`
	Title     string   `json:"title"`
	Body      string   `json:"body"`
	Labels    []string `json:"labels"`
	Priority  int      `json:"priority"`
	DependsOn []string `json:"depends_on"`
	// IdempotencyKey ("" for none) and PayloadDigest make a repeated
	// create a replay; the digest covers the create's payload.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	PayloadDigest  string `json:"-"`
	State          State  `json:"state"`
	// Generation counts the task's changes (1 at creation); Revision is
	// the compare-and-swap token bound to it and the task's content.
	Generation int64  `json:"-"`
	Revision   string `json:"revision"`
	// Fence is the fence of the newest attempt (0 before the first): every
	// attempt gets the task's previous fence plus one.
	Fence     int64     `json:"fence"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// FeedRevision is the revision of its owner's project feed that the
	// task's latest change made (set by the store; see [Service.Events]).
	FeedRevision int64 `json:"-"`
}

// An Attempt is one leased claim of a task by one Workflow Session.
type Attempt struct {
	ID        string `json:"attempt_id"`
	TaskID    string `json:"task_id"`
	SessionID string `json:"session_id"`
	// Fence is the attempt's fencing token: larger than every earlier
	// attempt's of the same task.
	Fence      int64        `json:"fence"`
	LeaseUntil time.Time    `json:"lease_until"`
	State      AttemptState `json:"state"`
	// Outcome, Summary and CompletionKey are set by a completion; the
	// digest covers its payload (outcome and summary).
	Outcome          Outcome    `json:"outcome,omitempty"`
	Summary          string     `json:"summary,omitempty"`
	CompletionKey    string     `json:"completion_key,omitempty"`
	CompletionDigest string     `json:"-"`
	StartedAt        time.Time  `json:"started_at"`
	EndedAt          *time.Time `json:"ended_at,omitempty"`
}

// Dep is one dependency of a task and its current state.
type Dep struct {
	ID    string
	State State
}

var (
	taskIDRE    = regexp.MustCompile(`^wc_task_[0-9a-f]{32}$`)
	attemptIDRE = regexp.MustCompile(`^wc_attempt_[0-9a-f]{32}$`)
	revisionRE  = regexp.MustCompile(`^[1-9][0-9]{0,17}-[0-9a-f]{16}$`)
)

func newID(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("agenttask: crypto/rand failed: " + err.Error())
	}
	return prefix + hex.EncodeToString(b[:])
}

// NewTaskID returns a new random task id.
func NewTaskID() string { return newID(TaskIDPrefix) }

// NewAttemptID returns a new random attempt id.
func NewAttemptID() string { return newID(AttemptIDPrefix) }

func shown(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// ParseTaskID validates a task id's form: failure.InvalidArguments for
// anything but wc_task_ followed by 32 lowercase hex digits.
func ParseTaskID(id string) (string, error) {
	if !taskIDRE.MatchString(id) {
		return "", errorf("task id %q is not of the form wc_task_<32 lowercase hex>", shown(id))
	}
	return id, nil
}

// ParseAttemptID validates an attempt id's form: failure.InvalidArguments
// for anything but wc_attempt_ followed by 32 lowercase hex digits.
func ParseAttemptID(id string) (string, error) {
	if !attemptIDRE.MatchString(id) {
		return "", errorf("attempt id %q is not of the form wc_attempt_<32 lowercase hex>", shown(id))
	}
	return id, nil
}

// ParseRevision validates a revision's form (GENERATION-16 hex):
// failure.InvalidRevision otherwise.
func ParseRevision(rev string) (string, error) {
	if !revisionRE.MatchString(rev) {
		return "", failure.New(failure.InvalidRevision, "expected_revision %q is not a task revision (GENERATION-16 lowercase hex)", shown(rev))
	}
	return rev, nil
}

// revisionOf is t's revision at its generation: the generation and a
// digest over the task's id, generation and content.
func revisionOf(t Task) string {
	content, _ := json.Marshal(struct {
		ID, Project, Title, Body string
		Labels                   []string
		Priority                 int
		State                    State
		Generation, Fence        int64
	}{t.ID, t.Project, t.Title, t.Body, t.Labels, t.Priority, t.State, t.Generation, t.Fence})
	sum := sha256.Sum256(append([]byte("webcodex agent task revision v1\x00"), content...))
	return strconv.FormatInt(t.Generation, 10) + "-" + hex.EncodeToString(sum[:8])
}

// digest is a payload digest under a domain-separating label.
func digest(label string, v any) string {
	content, _ := json.Marshal(v)
	sum := sha256.Sum256(append([]byte(label+"\x00"), content...))
	return hex.EncodeToString(sum[:])
}

// UnknownTask is the not_found of a task that does not exist or belongs to
// another owner: the same message for both.
func UnknownTask(id string) error {
	return failure.New(failure.NotFound, "no agent task %s exists", id)
}

// UnknownAttempt is the not_found of an attempt that does not exist or
// whose task belongs to another owner: the same message for both.
func UnknownAttempt(id string) error {
	return failure.New(failure.NotFound, "no agent task attempt %s exists", id)
}

// Refusal reasons: the detail "reason" of a refused heartbeat or
// completion (failure.StalePrecondition), which the caller records as
// negative evidence.
const (
	ReasonStaleFence   = "stale_fence"
	ReasonLeaseExpired = "lease_expired"
	ReasonNotLive      = "attempt_not_live"
)

func refused(a Attempt, reason, format string, args ...any) error {
	return failure.New(failure.StalePrecondition, "%s", fmt.Sprintf(format, args...)).
		WithDetail("reason", reason).WithDetail("attempt_id", a.ID).WithDetail("attempt_state", string(a.State)).
		WithDetail("fence", a.Fence)
}

func errorf(format string, args ...any) error {
	return failure.New(failure.InvalidArguments, "%s", fmt.Sprintf(format, args...))
}
