package runnerhub

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runnerlink"
	"github.com/webcodex/webcodex/internal/runnerwire"
	"github.com/webcodex/webcodex/internal/workspace"
)

// TestARevokedTokenEndsALongPollLinkAtItsNextRequest: over long-poll the
// token is checked at every request, so a revoked token ends the link at
// the runner's next request, before any heartbeat interval passes.
func TestARevokedTokenEndsALongPollLinkAtItsNextRequest(t *testing.T) {
	f := newFixture(t, 0, runnerlink.LongPoll) // a heartbeat interval far beyond the test
	link, gen := f.connect(t)
	c := f.hub.current("box")
	f.auth.revoked.Store(true)
	hb, _ := runnerwire.Encode(runnerwire.KindHeartbeat, gen, "", runnerwire.Heartbeat{})
	link.Write(context.Background(), runnerlink.Text, hb) // its send is refused 401
	<-c.done
	if _, _, err := link.Read(context.Background()); err == nil {
		t.Fatal("the runner's end outlived its refused token")
	}
	if err := f.invoke(context.Background()); !failure.Is(err, failure.RunnerUnavailable) {
		t.Fatalf("a call after revocation: %v", err)
	}
}

// TestLongPollEndpointRefusals: the long-poll endpoint takes POST only,
// needs a runner token, and an open counts against the hello rate limit.
func TestLongPollEndpointRefusals(t *testing.T) {
	f := newFixture(t, 0, runnerlink.LongPoll)
	do := func(method, op, token string) int {
		req, _ := http.NewRequest(method, f.url+runnerlink.PollPath+op, strings.NewReader(""))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := do(http.MethodGet, "recv", "good"); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET: HTTP %d", code)
	}
	if code := do(http.MethodPost, "recv", ""); code != http.StatusUnauthorized {
		t.Fatalf("no token: HTTP %d", code)
	}
	if code := do(http.MethodPost, "recv", "bad"); code != http.StatusUnauthorized {
		t.Fatalf("a bad token: HTTP %d", code)
	}
	if code := do(http.MethodPost, "recv", "good"); code != http.StatusNotFound {
		t.Fatalf("a receive naming no link: HTTP %d", code)
	}
	limited := false
	for range HelloBurst + 1 {
		if code := do(http.MethodPost, "open", "good"); code == http.StatusTooManyRequests {
			limited = true
			break
		} else if code != http.StatusBadRequest { // an empty body is no hello
			t.Fatalf("an empty open: HTTP %d", code)
		}
	}
	if !limited || f.hub.poll.Len() != 0 {
		t.Fatalf("%d opens were not rate-limited (%d links)", HelloBurst+1, f.hub.poll.Len())
	}
}

// TestAReplicaNamesItselfWhenItsRunnerIsNotConnected: with several
// replicas, a call for a runner not connected to this one fails
// runner_unavailable saying so and how a runner reaches every replica;
// a single server's message stays as it was.
func TestAReplicaNamesItselfWhenItsRunnerIsNotConnected(t *testing.T) {
	for _, replica := range []string{"", "rp_7"} {
		h := New(Options{Auth: &tokens{}, Projects: &registry{}, Store: &records{all: map[string]Record{}}, Replica: replica})
		p := project.Project{ID: project.RunnerID("box", "demo"), Name: "demo", Runner: "box", Owner: "local"}
		_, err := h.Runner("box").(workspace.Remote).Invoke(context.Background(), p, "files.read", []byte(`{}`))
		msg := failure.MessageOf(err)
		if !failure.Is(err, failure.RunnerUnavailable) || strings.Contains(msg, "replica") != (replica != "") ||
			(replica != "" && (!strings.Contains(msg, replica) || !strings.Contains(msg, "--server"))) {
			t.Fatalf("replica %q: %v", replica, err)
		}
		h.Close()
	}
}
