package app_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
)

func TestOAuthConfig(t *testing.T) {
	load := func(t *testing.T, toml string) (app.Config, error) {
		t.Helper()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, app.ConfigFile), []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
		return app.LoadConfig(dir, env(nil))
	}
	t.Run("Unset", func(t *testing.T) {
		cfg, err := load(t, "")
		if err != nil || cfg.OAuth != (app.OAuthConfig{}) || cfg.OAuthResource() != "" {
			t.Fatalf("%+v %v", cfg.OAuth, err)
		}
		if v, err := cfg.OAuthVerifier(); v != nil || err != nil {
			t.Fatalf("a verifier without an issuer: %v %v", v, err)
		}
	})
	t.Run("IssuerWithPublicURL", func(t *testing.T) {
		cfg, err := load(t, "public_url = \"https://wc.example/\"\n[oauth]\nissuer = \"https://login.example/tenant\"\n")
		if err != nil || cfg.OAuth.Issuer != "https://login.example/tenant" || cfg.OAuthResource() != "https://wc.example/mcp" {
			t.Fatalf("%+v %q %v", cfg.OAuth, cfg.OAuthResource(), err)
		}
		v, err := cfg.OAuthVerifier()
		if err != nil || v.Issuer() != "https://login.example/tenant" || v.Resource() != "https://wc.example/mcp" {
			t.Fatalf("verifier %v %v", v, err)
		}
	})
	t.Run("BuiltIn", func(t *testing.T) {
		cfg, err := load(t, "[oauth]\nenabled = true\nclient_metadata_private = true\n")
		if err != nil || !cfg.OAuth.Enabled || !cfg.OAuth.ClientMetadataPrivate {
			t.Fatalf("%+v %v", cfg.OAuth, err)
		}
		cfg, err = app.LoadConfig(t.TempDir(), env(map[string]string{"WEBCODEX_OAUTH": "true"}))
		if err != nil || !cfg.OAuth.Enabled {
			t.Fatalf("WEBCODEX_OAUTH=true: %+v %v", cfg.OAuth, err)
		}
		var ce *app.ConfigError
		if _, err := app.LoadConfig(t.TempDir(), env(map[string]string{"WEBCODEX_OAUTH": "yes please"})); !errors.As(err, &ce) || ce.Key != "WEBCODEX_OAUTH" {
			t.Fatalf("WEBCODEX_OAUTH=yes please: %v", err)
		}
	})
	t.Run("AudienceOverride", func(t *testing.T) {
		cfg, err := load(t, "[oauth]\nissuer = \"http://127.0.0.1:9000\"\naudience = \"https://wc.example/mcp\"\n")
		if err != nil || cfg.OAuthResource() != "https://wc.example/mcp" {
			t.Fatalf("%+v %q %v", cfg.OAuth, cfg.OAuthResource(), err)
		}
	})
	for name, tc := range map[string]struct{ toml, key string }{
		"plain http issuer":        {"public_url = \"https://wc.example\"\n[oauth]\nissuer = \"http://login.example\"\n", "oauth.issuer"},
		"trailing slash":           {"public_url = \"https://wc.example\"\n[oauth]\nissuer = \"https://login.example/\"\n", "oauth.issuer"},
		"issuer with a query":      {"public_url = \"https://wc.example\"\n[oauth]\nissuer = \"https://login.example?a=b\"\n", "oauth.issuer"},
		"no resource":              {"[oauth]\nissuer = \"https://login.example\"\n", "oauth.issuer"},
		"audience alone":           {"[oauth]\naudience = \"https://wc.example/mcp\"\n", "oauth.audience"},
		"audience not a URL":       {"[oauth]\nissuer = \"https://login.example\"\naudience = \"wc\"\n", "oauth.audience"},
		"unknown key in oauth":     {"[oauth]\nissuer = \"https://login.example\"\nisuer = \"x\"\n", "oauth.isuer"},
		"oauth is not a string":    {"oauth = \"https://login.example\"\n", "oauth"},
		"built-in and issuer":      {"public_url = \"https://wc.example\"\n[oauth]\nenabled = true\nissuer = \"https://login.example\"\n", "oauth.enabled"},
		"private without built-in": {"[oauth]\nclient_metadata_private = true\n", "oauth.client_metadata_private"},
		"ca file without built-in": {"[oauth]\nclient_metadata_ca_file = \"/ca.pem\"\n", "oauth.client_metadata_ca_file"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, tc.toml)
			var ce *app.ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.key {
				t.Fatalf("got %v, want a ConfigError for %s", err, tc.key)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
		})
	}
}
