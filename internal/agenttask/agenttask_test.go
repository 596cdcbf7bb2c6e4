package agenttask_test

import (
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/failure"
)

func TestIDs(t *testing.T) {
	for _, c := range []struct {
		id    string
		parse func(string) (string, error)
	}{{agenttask.NewTaskID(), agenttask.ParseTaskID}, {agenttask.NewAttemptID(), agenttask.ParseAttemptID}} {
		if _, err := c.parse(c.id); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"", strings.ToUpper(c.id), c.id + "0", c.id[:len(c.id)-1], strings.Repeat("x", 1000)} {
			if _, err := c.parse(bad); !failure.Is(err, failure.InvalidArguments) || len(err.Error()) > 200 {
				t.Fatalf("%q: %v", bad, err)
			}
		}
	}
	if _, err := agenttask.ParseTaskID(agenttask.NewAttemptID()); err == nil {
		t.Fatal("an attempt id parsed as a task id")
	}
	for _, bad := range []string{"", "0-0000000000000000", "1-000000000000000", "1-000000000000000g", "x"} {
		if _, err := agenttask.ParseRevision(bad); !failure.Is(err, failure.InvalidRevision) {
			t.Fatalf("revision %q: %v", bad, err)
		}
	}
}

func TestStates(t *testing.T) {
	for s, finished := range map[agenttask.State]bool{agenttask.Open: false, agenttask.Claimed: false,
		agenttask.Done: true, agenttask.Failed: true, agenttask.Cancelled: true} {
		if !s.Valid() || s.Finished() != finished {
			t.Fatalf("%s: valid %v finished %v", s, s.Valid(), s.Finished())
		}
	}
	if agenttask.State("paused").Valid() {
		t.Fatal("an unknown state is valid")
	}
}

// TestEventsBounds pins the bounds of wait_for_agent_events; the contract
// suite (storetest) refuses a limit above EventsMax and waits outside
// MinEventsWait-MaxEventsWait, and an events token over
// MaxEventsTokenChars, and returns EventsDefault tasks without a limit.
func TestEventsBounds(t *testing.T) {
	if agenttask.EventsDefault != 50 || agenttask.EventsMax != 100 || agenttask.MinEventsWait != time.Second ||
		agenttask.MaxEventsWait != time.Minute || agenttask.MaxEventsTokenChars != 128 || agenttask.EventKeyBytes != 32 ||
		agenttask.EventsTokenPrefix != "wte1_" {
		t.Fatal("the events bounds changed; update docs/tools.md and decision 0078")
	}
	if a, b := agenttask.FeedKey("fp", "agent:local:p"), agenttask.FeedKey("fp", "agent:local:q"); a == b || len(a) != 32 {
		t.Fatalf("feed keys %s %s", a, b)
	}
}
