package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/runner"
)

func status(t *testing.T, base string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/status", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("status %s: %v", b, err)
	}
	return st
}

// TestServeSandbox runs the real binary: the banner and /api/status name
// the sandbox in force, a run_process reading the data directory fails as
// the command's own failure, and sandbox = "off" is announced. The banner
// also names the console, whose sign-in page answers.
func TestServeSandbox(t *testing.T) {
	if runner.LandlockABI() < 1 {
		t.Skip("Landlock is unavailable on this kernel")
	}
	data, dir := t.TempDir(), t.TempDir()
	srv := startServe(t, "--data-dir", data, "--project", "p="+dir)
	sb, _ := status(t, srv.base)["sandbox"].(map[string]any)
	if sb["mode"] != "workspace-write" || sb["abi"].(float64) < 1 || sb["network"] != "on" {
		t.Fatalf("status sandbox %v", sb)
	}
	for _, f := range []string{"admin-token", "evidence.key", "workflow.db"} {
		res, err := callTool(context.Background(), srv.base, "run_process", map[string]any{
			"project": "agent:local:p", "argv": []string{"cat", filepath.Join(data, f)},
		}, "")
		if err != nil {
			t.Fatal(err)
		}
		if res.Success || res.Error == nil || res.Error.Kind != "command_failed" {
			t.Fatalf("reading %s: %+v", f, res)
		}
	}
	resp, err := http.Get(srv.base + "/console/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	out := stopServe(t, srv)
	if !strings.Contains(out, "  sandbox   workspace-write (Landlock ABI ") {
		t.Fatalf("banner without the sandbox:\n%s", out)
	}
	if !strings.Contains(out, "  console   "+srv.base+"/console/ ") || resp.StatusCode != http.StatusOK {
		t.Fatalf("banner without the console, or its sign-in page answered %d:\n%s", resp.StatusCode, out)
	}

	if err := os.WriteFile(filepath.Join(data, "config.toml"), []byte("sandbox = \"off\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv = startServe(t, "--data-dir", data)
	if sb, _ := status(t, srv.base)["sandbox"].(map[string]any); sb["mode"] != "off" {
		t.Fatalf("status sandbox with sandbox = off: %v", sb)
	}
	if out := stopServe(t, srv); !strings.Contains(out, "  sandbox   off (explicitly disabled)") {
		t.Fatalf("banner without the opt-out:\n%s", out)
	}
}
