// Package mcpprovider runs the stdio MCP servers ("providers") a machine's
// configuration names, next to the project files they serve: one instance
// per (provider, project), started on the first request through the
// official go-sdk client, sandboxed (workspace-write at most, confined to
// the project) and contained like every child, stopped when idle and
// started again after it ends. A provider's tool is called only at the
// schema revision it was described at (describe before call).
package mcpprovider

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/webcodex/webcodex/internal/ident"
)

// Bounds of a provider's configuration.
const (
	// MaxProviders bounds the providers one machine configures.
	MaxProviders = 32
	// MaxArgs bounds a provider's command-line arguments.
	MaxArgs = 64
	// MaxEnv bounds a provider's environment allow-list.
	MaxEnv = 64
)

// Provider is one configured stdio MCP server ([mcp.providers.NAME]).
type Provider struct {
	// Command is the program (a path, or a name looked up on the PATH
	// of the runner's scrubbed child environment).
	Command string   `toml:"command" json:"command"`
	Args    []string `toml:"args" json:"args,omitempty"`
	// Env is an allow-list of variable NAMES passed through from this
	// machine's environment (a variable unset there is left out). No
	// values are configured: a secret stays in the environment, never in
	// the file.
	Env []string `toml:"env" json:"env,omitempty"`
	// Cwd is where the provider starts: "" is the root of the project a
	// request names (the provider then serves every project), otherwise
	// an absolute directory that must lie inside a project root (the
	// provider then serves only that project).
	Cwd string `toml:"cwd" json:"cwd,omitempty"`
}

// envName is the syntax of an environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks providers (by name) and makes each Cwd absolute against
// base; roots are the project roots a Cwd may lie in.
func Validate(providers map[string]Provider, base string, roots []string) error {
	if len(providers) > MaxProviders {
		return fmt.Errorf("mcp providers: at most %d", MaxProviders)
	}
	for name, p := range providers {
		if !ident.Valid(name) {
			return fmt.Errorf("mcp provider name %q must be 1-64 letters, digits, '.', '_' or '-'", name)
		}
		if strings.TrimSpace(p.Command) == "" {
			return fmt.Errorf("mcp provider %s: command is required", name)
		}
		if len(p.Args) > MaxArgs || len(p.Env) > MaxEnv {
			return fmt.Errorf("mcp provider %s: at most %d args and %d env names", name, MaxArgs, MaxEnv)
		}
		for _, e := range p.Env {
			if !envName.MatchString(e) {
				return fmt.Errorf("mcp provider %s: env %q is not a variable name (env lists names passed through, never values)", name, e)
			}
		}
		if p.Cwd != "" {
			if !filepath.IsAbs(p.Cwd) {
				p.Cwd = filepath.Join(base, p.Cwd)
			}
			p.Cwd = filepath.Clean(p.Cwd)
			if !insideAny(p.Cwd, roots) {
				return fmt.Errorf("mcp provider %s: cwd %s is not inside a project root", name, p.Cwd)
			}
			providers[name] = p
		}
	}
	return nil
}

// inside reports whether path is dir or lies under it.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func insideAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if inside(path, d) {
			return true
		}
	}
	return false
}
