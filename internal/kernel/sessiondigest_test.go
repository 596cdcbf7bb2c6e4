package kernel

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
)

// TestSessionDigest: the digest is the SHA-256 of json.Marshal's bytes of
// the session, and "" for a session json.Marshal refuses (its encoding
// is workflow's TestSessionAppendJSONIsMarshal).
func TestSessionDigest(t *testing.T) {
	at := time.Date(2026, 12, 1, 18, 0, 0, 123456789, time.FixedZone("x", 5*3600+30*60))
	s := workflow.Session{ID: "wc_sess_x", Title: "fix <the> \"test\"\n", CreatedAt: at, UpdatedAt: at, ClosedAt: &at,
		JobMarkers: []string{"job_1"}, Counters: workflow.Counters{ToolCalls: 3}}
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(want)
	if d := sessionDigest(s); d != hex.EncodeToString(sum[:]) {
		t.Fatalf("sessionDigest = %s, want the SHA-256 of json.Marshal's bytes", d)
	}
	s.UpdatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := json.Marshal(s); err == nil {
		t.Fatal("json.Marshal accepted year 10000")
	}
	if d := sessionDigest(s); d != "" {
		t.Fatalf("digest of an unencodable session is %q, want \"\"", d)
	}
}

// BenchmarkSessionDigest compares the direct encoding with json.Marshal
// on a typical session header.
func BenchmarkSessionDigest(b *testing.B) {
	at := time.Date(2026, 12, 1, 18, 0, 0, 123456789, time.UTC)
	s := workflow.Session{ID: "wc_sess_0123456789abcdef01234567", Project: "agent:local:bench", Title: "measure the kernel",
		Mode: workflow.ModeNormal, Lifecycle: workflow.Active, OwnerFingerprint: strings.Repeat("ab", 32),
		CreatedAt: at, UpdatedAt: at, EventsObserved: 1234, Counters: workflow.Counters{ToolCalls: 617}}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sessionDigest(s)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			j, _ := json.Marshal(s)
			digest(j)
		}
	})
}
