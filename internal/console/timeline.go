package console

import (
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
)

// TimelinePageSize is the number of timeline rows on one page; the
// timeline is paged over the session's retained tail (at most
// workflow.TailLimit events), newest first.
const TimelinePageSize = 100

// Row is one timeline row: a tool call (its started and finished events
// paired by call_id) or any other ledger event.
type Row struct {
	Seq  int64
	At   time.Time
	Kind workflow.EventKind
	Tool string
	// CallID, Role: a tool call's pair and whether it was recorded for the
	// session as recorder or as the business session.
	CallID string
	Role   workflow.Role
	// Started and Finished are the pair's events' times (zero when that
	// event is not retained, or the call has not finished).
	Started, Finished time.Time
	Outcome           workflow.Outcome
	ErrorKind         string
	DurationMS        int64
	// HasDuration is true when the finish recorded a duration.
	HasDuration bool
	// Expectation is the call's declared result expectation and whether it
	// held (the facts the tool recorded), "" when none was declared.
	Expectation, ExpectationMatched string
	// Failure is the call's failure class, "" when it is not one.
	Failure workflow.FailureClass
	// Open is true for a call started and not (yet) finished in the
	// retained tail.
	Open bool
	// Replayed is true for an idempotent replay: the call returned the
	// result of an earlier one, named by ReplayOf (a message or completion
	// id), and changed nothing; it is no new effect.
	Replayed     bool
	ReplayOf     string
	Text         string
	ChangedPaths []string
	Facts        []Fact
	Validation   *workflow.Validation
}

// Fact is one recorded key/value fact.
type Fact struct{ Key, Value string }

// Timeline is one page of rows.
type Timeline struct {
	Rows []Row
	// Page is this page (0 is the newest), Pages how many there are.
	Page, Pages int
	// Total counts the rows over the retained tail; EventsObserved counts
	// every event ever appended and Truncated says older ones are gone.
	Total          int
	EventsObserved int64
	Truncated      bool
}

// rows pairs the events (ascending) into timeline rows, newest first.
func rows(events []workflow.Event) []Row {
	out := make([]Row, 0, len(events))
	open := map[string]int{} // call_id+role -> index in out
	for _, e := range events {
		if e.Kind == workflow.EventToolCallFinished && e.CallID != "" {
			if i, ok := open[e.CallID+"\x00"+string(e.Role)]; ok {
				finish(&out[i], e)
				delete(open, e.CallID+"\x00"+string(e.Role))
				continue
			}
		}
		r := Row{Seq: e.Seq, At: e.At, Kind: e.Kind, Tool: e.Tool, CallID: e.CallID, Role: e.Role,
			Text: e.Text, ChangedPaths: e.ChangedPaths, Validation: e.Validation, Facts: facts(e.Facts)}
		switch e.Kind {
		case workflow.EventToolCallStarted:
			r.Started, r.Open = e.At, true
			if e.CallID != "" {
				open[e.CallID+"\x00"+string(e.Role)] = len(out)
			}
		case workflow.EventToolCallFinished:
			// Its start is no longer retained.
			finish(&r, e)
		default:
			r.Failure = workflow.ClassifyFailure(e)
		}
		out = append(out, r)
	}
	slices.Reverse(out)
	return out
}

// finish completes row r with its finished event e.
func finish(r *Row, e workflow.Event) {
	r.Open = false
	r.Finished, r.Outcome, r.ErrorKind = e.At, e.Outcome, e.ErrorKind
	r.DurationMS, r.HasDuration = e.DurationMS, e.DurationMS > 0 || e.Outcome != ""
	r.ChangedPaths = e.ChangedPaths
	r.Facts = append(r.Facts, facts(e.Facts)...)
	if e.Validation != nil {
		r.Validation = e.Validation
	}
	r.Expectation, r.ExpectationMatched = e.Facts["expectation"], e.Facts["expectation_matched"]
	r.Replayed, r.ReplayOf = e.Replayed, e.ReplayOf
	r.Failure = workflow.ClassifyFailure(e)
}

func facts(m map[string]string) []Fact {
	if len(m) == 0 {
		return nil
	}
	out := make([]Fact, 0, len(m))
	for k, v := range m {
		out = append(out, Fact{Key: k, Value: v})
	}
	slices.SortFunc(out, func(a, b Fact) int {
		if a.Key < b.Key {
			return -1
		}
		if a.Key > b.Key {
			return 1
		}
		return 0
	})
	return out
}

// page returns page p (0 newest) of rs.
func page(rs []Row, p int) Timeline {
	pages := max(1, (len(rs)+TimelinePageSize-1)/TimelinePageSize)
	p = min(max(p, 0), pages-1)
	lo := p * TimelinePageSize
	hi := min(lo+TimelinePageSize, len(rs))
	return Timeline{Rows: rs[lo:hi], Page: p, Pages: pages, Total: len(rs)}
}
