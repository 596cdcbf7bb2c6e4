package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/project"
)

// TestShareInstructionsWithoutAPublicURL: without a public https URL the
// hosted connectors are told what they need, and the local clients get
// the loopback URL and the bearer credential.
func TestShareInstructionsWithoutAPublicURL(t *testing.T) {
	var b strings.Builder
	writeShareInstructions(&b, shareInfo{Project: project.Project{ID: "agent:local:x", Root: "/x"}, Local: "http://127.0.0.1:8080",
		Token: "wc_pat_T", Expires: time.Now().Add(time.Hour)})
	out := b.String()
	for _, want := range []string{"need a public https URL", "claude mcp add --transport http webcodex http://127.0.0.1:8080/mcp --header \"Authorization: Bearer wc_pat_T\"",
		"codex mcp add webcodex --url http://127.0.0.1:8080/mcp"} {
		if !strings.Contains(out, want) {
			t.Errorf("instructions lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Authentication OAuth") {
		t.Errorf("OAuth offered without a public URL:\n%s", out)
	}
}

// TestShareRefusesBadTunnelChoices: an unknown --tunnel and a required
// cloudflared that is not on PATH are refused before anything starts.
func TestShareRefusesBadTunnelChoices(t *testing.T) {
	data := t.TempDir()
	if _, err := run(t, "--data-dir", data, "share", "--tunnel", "ngrok"); err == nil || !strings.Contains(err.Error(), "auto, cloudflared or none") {
		t.Fatalf("--tunnel ngrok: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := run(t, "--data-dir", data, "share", "--tunnel", "cloudflared"); err == nil || !strings.Contains(err.Error(), "not on PATH") {
		t.Fatalf("--tunnel cloudflared without it: %v", err)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Fatalf("a refused share touched the data directory: %v", entries)
	}
}
