package runneragent

import (
	"fmt"
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
