package pgnotify

import (
	"testing"
	"time"
)

func TestPollJitterStaysWithinTenPercent(t *testing.T) {
	if PollInterval != time.Second || PollJitter != PollInterval/10 {
		t.Fatalf("the poll is %s ± %s, the issue's fallback is 1 s ± 10%%", PollInterval, PollJitter)
	}
	lo, hi := PollInterval, PollInterval
	for range 10000 {
		d := jitter(PollInterval, PollJitter)
		if d < PollInterval-PollJitter || d > PollInterval+PollJitter {
			t.Fatalf("jittered poll %s is outside %s ± %s", d, PollInterval, PollJitter)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if hi-lo < PollJitter {
		t.Fatalf("10000 jittered polls spread over %s only: no jitter", hi-lo)
	}
}

func TestReconnectBackoffDoublesUpToItsCap(t *testing.T) {
	var waits []time.Duration
	for d := ReconnectMin; len(waits) < 10; d = nextBackoff(d) {
		waits = append(waits, d)
	}
	if waits[0] != ReconnectMin || waits[1] != 2*ReconnectMin || waits[len(waits)-1] != ReconnectMax {
		t.Fatalf("reconnection waits %v: want %s doubling to %s", waits, ReconnectMin, ReconnectMax)
	}
	for _, d := range waits {
		if d > ReconnectMax {
			t.Fatalf("a wait of %s passes the cap %s", d, ReconnectMax)
		}
	}
}

func TestTimeoutsStayBelowAWait(t *testing.T) {
	// A probe that waited as long as a board wait would be no check; a
	// silence longer than the poll fallback's worst case is found by ping.
	if ProbeTimeout >= 10*time.Second || PingAfter > 10*time.Second || ReconnectMax > 10*time.Second {
		t.Fatalf("probe %s, ping after %s, reconnect cap %s: each must stay under 10 s", ProbeTimeout, PingAfter, ReconnectMax)
	}
}
