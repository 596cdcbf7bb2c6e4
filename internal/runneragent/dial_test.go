package runneragent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/webcodex/webcodex/internal/runnerlink"
)

// TestAutoFallsBackOnlyWhenAProxyRefusesTheUpgrade: transport auto opens
// a long-poll link after an upgrade refused the way a proxy refuses it,
// and keeps to long-poll after; a refused token, a rate limit or a server
// that is down are no reason to fall back.
func TestAutoFallsBackOnlyWhenAProxyRefusesTheUpgrade(t *testing.T) {
	cfg, err := ParseConfig([]byte(fmt.Sprintf("client_id = \"box\"\n[projects]\ndemo = %q\n", t.TempDir())), "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status   int
		fallback bool
	}{
		{http.StatusUpgradeRequired, true}, {http.StatusBadRequest, true}, {http.StatusOK, true},
		{http.StatusBadGateway, false}, {http.StatusUnauthorized, false}, {http.StatusTooManyRequests, false},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			var upgrades, opens atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == runnerlink.WebSocketPath {
					upgrades.Add(1)
					w.WriteHeader(tc.status)
					return
				}
				if strings.HasPrefix(r.URL.Path, runnerlink.PollPath) {
					opens.Add(1)
				}
				http.Error(w, "no runners here", http.StatusTeapot)
			}))
			defer srv.Close()
			a, up := New(Options{Config: cfg, Servers: []string{srv.URL}, Token: "t"}), &upstream{url: srv.URL}
			for range 2 {
				_, err = a.dial(context.Background(), up, []byte("hello"))
				var he *runnerlink.HTTPError
				if tc.fallback && (!errors.As(err, &he) || he.Transport != runnerlink.LongPoll || he.Status != http.StatusTeapot) {
					t.Fatalf("after the fallback: %v", err)
				}
			}
			switch {
			case tc.fallback:
				if upgrades.Load() != 1 || opens.Load() != 2 || !up.polling.Load() {
					t.Fatalf("%d upgrades, %d opens, polling %t; want 1, 2, true", upgrades.Load(), opens.Load(), up.polling.Load())
				}
			case opens.Load() != 0 || up.polling.Load():
				t.Fatalf("fell back on HTTP %d", tc.status)
			case tc.status == http.StatusUnauthorized && !errors.Is(err, ErrFatal):
				t.Fatalf("a refused token: %v", err)
			}
			var retry *retryAfter
			if tc.status == http.StatusTooManyRequests && !errors.As(err, &retry) {
				t.Fatalf("a rate limit: %v", err)
			}
		})
	}
}
