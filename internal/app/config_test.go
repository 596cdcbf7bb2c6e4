package app_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfig(t *testing.T) {
	t.Run("Defaults", func(t *testing.T) {
		dir := t.TempDir()
		cfg, err := app.LoadConfig(dir, env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Listen != app.DefaultListen || cfg.DataDir != dir || !cfg.Loopback() || time.Duration(cfg.ShutdownTimeout) != 15*time.Second {
			t.Fatalf("defaults: %+v", cfg)
		}
	})
	t.Run("FileThenEnv", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, app.ConfigFile), []byte("listen = \"127.0.0.1:9999\"\nlog_level = \"debug\"\nshutdown_timeout = \"3s\"\nallowed_origins = [\"https://a.example\"]\n"), 0o600)
		cfg, err := app.LoadConfig(dir, env(map[string]string{"WEBCODEX_LISTEN": "127.0.0.1:7777", "WEBCODEX_TOKEN": "0123456789abcdef0123"}))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Listen != "127.0.0.1:7777" || cfg.LogLevel != "debug" || time.Duration(cfg.ShutdownTimeout) != 3*time.Second ||
			cfg.AllowedOrigins[0] != "https://a.example" || cfg.BootstrapToken != "0123456789abcdef0123" {
			t.Fatalf("merged: %+v", cfg)
		}
	})
	t.Run("ErrUnknownKey", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, app.ConfigFile), []byte("listen = \"127.0.0.1:1\"\nlisten_adress = \"x\"\n"), 0o600)
		_, err := app.LoadConfig(dir, env(nil))
		var ce *app.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "listen_adress") {
			t.Fatalf("got %v, want a ConfigError naming listen_adress", err)
		}
	})
	t.Run("RequestsPerPrincipal", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, app.ConfigFile), []byte("requests_per_principal = 4\n"), 0o600)
		if cfg, err := app.LoadConfig(dir, env(nil)); err != nil || cfg.RequestsPerPrincipal != 4 {
			t.Fatalf("from the file: %+v %v", cfg, err)
		}
		if cfg, err := app.LoadConfig(dir, env(map[string]string{"WEBCODEX_REQUESTS_PER_PRINCIPAL": "32"})); err != nil || cfg.RequestsPerPrincipal != 32 {
			t.Fatalf("from the environment: %+v %v", cfg, err)
		}
		for _, v := range []string{"65", "-1", "many"} {
			if _, err := app.LoadConfig(t.TempDir(), env(map[string]string{"WEBCODEX_REQUESTS_PER_PRINCIPAL": v})); err == nil {
				t.Errorf("requests_per_principal %q accepted", v)
			}
		}
	})
	t.Run("ErrBadValues", func(t *testing.T) {
		for name, e := range map[string]map[string]string{
			"listen":  {"WEBCODEX_LISTEN": "nonsense"},
			"level":   {"WEBCODEX_LOG_LEVEL": "loud"},
			"timeout": {"WEBCODEX_SHUTDOWN_TIMEOUT": "soon"},
			"token":   {"WEBCODEX_TOKEN": "short"},
			"queue":   {"WEBCODEX_JOB_QUEUE_PER_OWNER": "1001"},
			"queue-":  {"WEBCODEX_JOB_QUEUE_PER_OWNER": "-1"},
			"run-":    {"WEBCODEX_JOB_RUNNING_PER_OWNER": "-1"},
			"runx":    {"WEBCODEX_JOB_RUNNING_PER_OWNER": "two"},
		} {
			if _, err := app.LoadConfig(t.TempDir(), env(e)); err == nil {
				t.Errorf("%s: accepted %v", name, e)
			}
		}
	})
}

func TestSandboxConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, err := app.LoadConfig(dir, env(nil))
	if err != nil || cfg.Sandbox != "workspace-write" || cfg.SandboxNetwork != "on" {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
	os.WriteFile(filepath.Join(dir, app.ConfigFile), []byte("sandbox = \"read-only\"\nsandbox_network = \"off\"\nsandbox_extra_write = [\"/var/cache/build\"]\n"), 0o600)
	cfg, err = app.LoadConfig(dir, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.SandboxPolicy()
	if p.Mode != "read-only" || p.Network != "off" || len(p.ExtraWrite) != 1 || p.ExtraWrite[0] != "/var/cache/build" || len(p.Deny) != 1 || p.Deny[0] != dir {
		t.Fatalf("policy %+v", p)
	}
	for key, body := range map[string]string{
		"sandbox":             "sandbox = \"none\"\n",
		"sandbox_network":     "sandbox_network = \"maybe\"\n",
		"sandbox_extra_write": "sandbox_extra_write = [\"relative/dir\"]\n",
	} {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, app.ConfigFile), []byte(body), 0o600)
		_, err := app.LoadConfig(d, env(nil))
		var ce *app.ConfigError
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("%s: got %v, want a ConfigError naming %s", key, err, key)
		}
	}
}

// TestSandboxDenialsConfig: [metrics] sandbox_denials is on by default;
// a value that is not a boolean is refused naming the key.
func TestSandboxDenialsConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, err := app.LoadConfig(dir, env(nil))
	if err != nil || !cfg.Metrics.SandboxDenials {
		t.Fatalf("default: %+v %v", cfg.Metrics, err)
	}
	os.WriteFile(filepath.Join(dir, app.ConfigFile), []byte("[metrics]\nsandbox_denials = false\n"), 0o600)
	if cfg, err = app.LoadConfig(dir, env(nil)); err != nil || cfg.Metrics.SandboxDenials || !cfg.Metrics.Enabled {
		t.Fatalf("off: %+v %v", cfg.Metrics, err)
	}
	for _, body := range []string{"[metrics]\nsandbox_denials = \"yes\"\n", "[metrics]\nsandbox_denials = 1\n"} {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, app.ConfigFile), []byte(body), 0o600)
		_, err := app.LoadConfig(d, env(nil))
		var ce *app.ConfigError
		if !errors.As(err, &ce) || ce.Key != "metrics.sandbox_denials" {
			t.Errorf("%q: got %v, want a ConfigError naming metrics.sandbox_denials", body, err)
		}
	}
}

// TestJobRunningPerOwnerConfig: job_running_per_owner is 0 (the default)
// or 1 to job_concurrency; above that it is refused naming the key.
func TestJobRunningPerOwnerConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, err := app.LoadConfig(dir, env(nil))
	if err != nil || cfg.JobRunningPerOwner != 0 {
		t.Fatalf("default: %d %v", cfg.JobRunningPerOwner, err)
	}
	os.WriteFile(filepath.Join(dir, app.ConfigFile), []byte("job_concurrency = 4\njob_running_per_owner = 4\n"), 0o600)
	if cfg, err = app.LoadConfig(dir, env(nil)); err != nil || cfg.JobRunningPerOwner != 4 {
		t.Fatalf("job_running_per_owner = job_concurrency: %d %v", cfg.JobRunningPerOwner, err)
	}
	_, err = app.LoadConfig(dir, env(map[string]string{"WEBCODEX_JOB_RUNNING_PER_OWNER": "5"}))
	var ce *app.ConfigError
	if !errors.As(err, &ce) || ce.Key != "job_running_per_owner" {
		t.Fatalf("above job_concurrency: %v, want a ConfigError for job_running_per_owner", err)
	}
}

// TestMCPProvidersConfig: config.toml's [mcp.providers.NAME] loads; a
// provider with no command, a value in env, a cwd (a server's projects
// are registered at run time) or an unknown key stops the load.
func TestMCPProvidersConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, app.ConfigFile), []byte("[mcp.providers.fs]\ncommand = \"mcp-server-filesystem\"\nargs = [\".\"]\nenv = [\"HOME\"]\n"), 0o600)
	cfg, err := app.LoadConfig(dir, env(nil))
	if err != nil || cfg.MCP.Providers["fs"].Command != "mcp-server-filesystem" {
		t.Fatalf("%+v %v", cfg.MCP, err)
	}
	for name, body := range map[string]string{
		"no command": "[mcp.providers.fs]\nargs = [\".\"]\n",
		"env value":  "[mcp.providers.fs]\ncommand = \"x\"\nenv = [\"TOKEN=s\"]\n",
		"cwd":        "[mcp.providers.fs]\ncommand = \"x\"\ncwd = \"/srv\"\n",
	} {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, app.ConfigFile), []byte(body), 0o600)
		_, err := app.LoadConfig(d, env(nil))
		var ce *app.ConfigError
		if !errors.As(err, &ce) || ce.Key != "mcp.providers" {
			t.Errorf("%s: got %v, want a ConfigError naming mcp.providers", name, err)
		}
	}
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, app.ConfigFile), []byte("[mcp.providers.fs]\ncommand = \"x\"\ncolour = 1\n"), 0o600)
	if _, err := app.LoadConfig(d, env(nil)); err == nil {
		t.Error("an unknown key was accepted")
	}
}
