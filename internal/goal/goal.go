// Package goal is the durable Goal domain (wc_goal_ ids): what an
// authority group is trying to achieve across Workflow Sessions, with a
// compare-and-swap revision, bounded step progress and a recovery summary.
//
// Goals are correlation only. A Goal may be associated with Workflow
// Sessions of its owner and project, but the association grants no
// session or project authority, and no session lifecycle (finishing or
// closing a session) ever changes a Goal: every Goal transition is an
// explicit call of this package. The package reads no session store; the
// caller passes what it verified about a session (its owner and project).
package goal

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

// IDPrefix begins every Goal id: wc_goal_ + 32 lowercase hex.
const IDPrefix = "wc_goal_"

// Bounds.
const (
	// TitleMaxChars bounds a Goal's title (1-200 characters).
	TitleMaxChars = 200
	// ObjectiveMaxChars bounds a Goal's objective (description).
	ObjectiveMaxChars = 4000
	// RecoverySummaryMaxChars bounds a checkpoint's recovery summary.
	RecoverySummaryMaxChars = 4000
	// MaxSteps bounds a checkpoint's step list.
	MaxSteps = 32
	// StepTitleMaxChars bounds one step's title (1-200 characters).
	StepTitleMaxChars = 200
	// MaxSessionsPerGoal bounds the Workflow Sessions one Goal correlates.
	MaxSessionsPerGoal = 64
	// MaxGoalsPerOwner bounds the Goals one authority group holds.
	MaxGoalsPerOwner = 1000
	// ListDefault and ListMax bound a list page.
	ListDefault = 20
	ListMax     = 100
)

// Status is a Goal's lifecycle state. Any status may follow any other,
// and only through an explicit update.
type Status string

// Goal statuses.
const (
	Active    Status = "active"
	Blocked   Status = "blocked"
	Completed Status = "completed"
	Abandoned Status = "abandoned"
)

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case Active, Blocked, Completed, Abandoned:
		return true
	}
	return false
}

// StepStatus is one step's state.
type StepStatus string

// Step statuses.
const (
	StepPending    StepStatus = "pending"
	StepInProgress StepStatus = "in_progress"
	StepDone       StepStatus = "done"
	StepSkipped    StepStatus = "skipped"
)

// Valid reports whether s is a known step status.
func (s StepStatus) Valid() bool {
	switch s {
	case StepPending, StepInProgress, StepDone, StepSkipped:
		return true
	}
	return false
}

// Step is one step of a Goal's progress.
type Step struct {
	Title  string     `json:"title"`
	Status StepStatus `json:"status"`
}

// Progress counts a Goal's steps: done counts done and skipped steps.
type Progress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// A Goal is one stored Goal.
type Goal struct {
	ID string `json:"goal_id"`
	// Owner is the authority-group fingerprint of the Goal's creator (as
	// a Workflow Session's owner_authority_fingerprint); only that group
	// sees the Goal.
	Owner string `json:"-"`
	// Project is the registered project the Goal is bound to ("" for
	// none): only sessions of that project may be associated with it.
	Project   string `json:"project,omitempty"`
	Title     string `json:"title"`
	Objective string `json:"objective"`
	Status    Status `json:"status"`
	// Generation counts the Goal's changes (1 at creation); Revision is
	// the compare-and-swap token bound to it and to the Goal's content.
	Generation int64  `json:"-"`
	Revision   string `json:"revision"`
	Steps      []Step `json:"steps"`
	// RecoverySummary is the newest checkpoint's summary.
	RecoverySummary string `json:"recovery_summary"`
	Checkpoints     int64  `json:"checkpoints"`
	// CheckpointedAt is when the newest checkpoint was recorded, and
	// CheckpointSession its verified recorder session ("" without one).
	CheckpointedAt    *time.Time `json:"checkpointed_at,omitempty"`
	CheckpointSession string     `json:"checkpoint_session_id,omitempty"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
}

// Progress counts the Goal's steps.
func (g Goal) Progress() Progress {
	p := Progress{Total: len(g.Steps)}
	for _, s := range g.Steps {
		if s.Status == StepDone || s.Status == StepSkipped {
			p.Done++
		}
	}
	return p
}

// Ref names a Goal: id and title only (session summaries and handoff
// briefs carry nothing more).
type Ref struct {
	ID    string `json:"goal_id"`
	Title string `json:"title"`
}

// Association is one recorded correlation of a Goal with a Workflow
// Session.
type Association struct {
	GoalID    string    `json:"goal_id"`
	SessionID string    `json:"session_id"`
	Project   string    `json:"project"`
	At        time.Time `json:"associated_at"`
}

var (
	idRE       = regexp.MustCompile(`^wc_goal_[0-9a-f]{32}$`)
	revisionRE = regexp.MustCompile(`^([1-9][0-9]{0,17})-[0-9a-f]{16}$`)
)

// NewID returns a new random Goal id.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("goal: crypto/rand failed: " + err.Error())
	}
	return IDPrefix + hex.EncodeToString(b[:])
}

// ParseID validates the form of a Goal id: failure.InvalidArguments for
// anything but wc_goal_ followed by 32 lowercase hex digits.
func ParseID(id string) (string, error) {
	if !idRE.MatchString(id) {
		if len(id) > 64 {
			id = id[:64] + "..."
		}
		return "", failure.New(failure.InvalidArguments, "goal id %q is not of the form wc_goal_<32 lowercase hex>", id)
	}
	return id, nil
}

// ParseRevision validates the form of a revision (GENERATION-16 hex):
// failure.InvalidRevision otherwise.
func ParseRevision(rev string) (string, error) {
	if !revisionRE.MatchString(rev) {
		if len(rev) > 64 {
			rev = rev[:64] + "..."
		}
		return "", failure.New(failure.InvalidRevision, "expected_revision %q is not a goal revision (GENERATION-16 lowercase hex)", rev)
	}
	return rev, nil
}

// revisionOf is the revision of g at its generation: the generation and a
// digest over the Goal's id, generation and canonical content, so that a
// revision of one Goal or generation never matches another.
func revisionOf(g Goal) string {
	content, _ := json.Marshal(struct {
		ID, Project, Title, Objective, Summary string
		Status                                 Status
		Steps                                  []Step
		Generation, Checkpoints                int64
	}{g.ID, g.Project, g.Title, g.Objective, g.RecoverySummary, g.Status, g.Steps, g.Generation, g.Checkpoints})
	sum := sha256.Sum256(append([]byte("webcodex goal revision v1\x00"), content...))
	return strconv.FormatInt(g.Generation, 10) + "-" + hex.EncodeToString(sum[:8])
}

// conflict is the revision_conflict of a stale expected revision.
func conflict(g Goal, expected string) error {
	return failure.New(failure.RevisionConflict, "goal %s is at revision %s, not %s; read it and retry", g.ID, g.Revision, expected).
		WithDetail("current_revision", g.Revision)
}

func unknown(id string) error {
	return failure.New(failure.UnknownGoalID, "no goal %s exists", id)
}

func errorf(format string, args ...any) error {
	return failure.New(failure.InvalidArguments, "%s", fmt.Sprintf(format, args...))
}
