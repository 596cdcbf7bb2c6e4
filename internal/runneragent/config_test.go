package runneragent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	dir := t.TempDir()
	c, err := ParseConfig([]byte(fmt.Sprintf("client_id = \"box\"\n[projects]\ndemo = %q\n", dir)), "/")
	if err != nil {
		t.Fatal(err)
	}
	if c.Policy.MaxConcurrentJobs != DefaultMaxConcurrentJobs || c.Policy.Sandbox != "workspace-write" || c.Projects["demo"] == "" {
		t.Fatalf("defaults: %+v", c)
	}
	for name, body := range map[string]string{
		"unknown key":       "client_id = \"box\"\ncolour = 1\n[projects]\ndemo = %q\n",
		"unknown policy":    "client_id = \"box\"\n[projects]\ndemo = %q\n[policy]\nsandboxx = \"off\"\n",
		"no client id":      "[projects]\ndemo = %q\n",
		"jobs 65":           "client_id = \"box\"\n[projects]\ndemo = %q\n[policy]\nmax_concurrent_jobs = 65\n",
		"bad sandbox":       "client_id = \"box\"\n[projects]\ndemo = %q\n[policy]\nsandbox = \"maybe\"\n",
		"outside roots":     "client_id = \"box\"\n[projects]\ndemo = %q\n[policy]\nallowed_roots = [\"/proc\"]\n",
		"bad project name":  "client_id = \"box\"\n[projects]\n\"../x\" = %q\n",
		"bad resource host": "client_id = \"box\"\n[projects]\ndemo = %q\n[ssh.resources.db]\nhost = \"-oProxyCommand=x\"\n",
	} {
		if _, err := ParseConfig([]byte(fmt.Sprintf(body, dir)), "/"); err == nil {
			t.Errorf("%s: accepted", name)
		} else if name == "unknown key" && !strings.Contains(err.Error(), "colour") {
			t.Errorf("unknown key: the error does not name it: %v", err)
		}
	}
	if _, err := ParseConfig([]byte("client_id = \"box\"\n[projects]\ndemo = \"/does/not/exist\"\n"), "/"); err == nil {
		t.Error("a missing project directory was accepted")
	}
}

// [skills] roots: relative to the file, canonical, existing, at most
// MaxSkillRoots.
func TestParseConfigSkillRoots(t *testing.T) {
	dir, base := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("client_id = \"box\"\n[projects]\ndemo = %q\n[skills]\n", dir)
	c, err := ParseConfig([]byte(head+"roots = [\"skills\"]\n"), base)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(base, "skills"))
	if len(c.Skills.Roots) != 1 || c.Skills.Roots[0] != want {
		t.Fatalf("roots = %v, want [%s]", c.Skills.Roots, want)
	}
	if _, err := ParseConfig([]byte(head+"roots = [\"missing\"]\n"), base); err == nil || !strings.Contains(err.Error(), "roots[0]") {
		t.Fatalf("a missing skills root: %v", err)
	}
	many := strings.Repeat("\"skills\", ", MaxSkillRoots+1)
	if _, err := ParseConfig([]byte(head+"roots = ["+many+"]\n"), base); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("%d skills roots: %v", MaxSkillRoots+1, err)
	}
	max := strings.Repeat("\"skills\", ", MaxSkillRoots)
	if _, err := ParseConfig([]byte(head+"roots = ["+max+"]\n"), base); err != nil {
		t.Fatalf("%d skills roots: %v", MaxSkillRoots, err)
	}
}

func TestParseConfigMCPProviders(t *testing.T) {
	dir := t.TempDir()
	good := "client_id = \"box\"\n[projects]\ndemo = %q\n[mcp.providers.fs]\ncommand = \"mcp-server-filesystem\"\nargs = [\".\"]\nenv = [\"HOME\", \"NODE_OPTIONS\"]\ncwd = %q\n"
	c, err := ParseConfig([]byte(fmt.Sprintf(good, dir, dir)), "/")
	if err != nil {
		t.Fatal(err)
	}
	if p := c.MCP.Providers["fs"]; p.Command != "mcp-server-filesystem" || len(p.Env) != 2 || p.Cwd != c.Projects["demo"] {
		t.Fatalf("provider: %+v", p)
	}
	for name, body := range map[string]string{
		"unknown key":   "[mcp.providers.fs]\ncommand = \"x\"\ncolour = 1\n",
		"no command":    "[mcp.providers.fs]\nargs = [\"x\"]\n",
		"bad name":      "[mcp.providers.\"../fs\"]\ncommand = \"x\"\n",
		"env value":     "[mcp.providers.fs]\ncommand = \"x\"\nenv = [\"TOKEN=secret\"]\n",
		"cwd elsewhere": "[mcp.providers.fs]\ncommand = \"x\"\ncwd = \"/proc\"\n",
		"unknown table": "[mcp.servers.fs]\ncommand = \"x\"\n",
	} {
		cfg := fmt.Sprintf("client_id = \"box\"\n[projects]\ndemo = %q\n", dir) + body
		if _, err := ParseConfig([]byte(cfg), "/"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
