// Package runneragent is `webcodex runner`: a long-lived process on a
// repository's machine that dials out to a WebCodex server, announces its
// projects and serves the server's requests on them (the operations tools
// declare and process starts) with this machine's files, under its own
// path policy and sandbox. It never opens a port and never daemonizes.
package runneragent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/webcodex/webcodex/internal/ident"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerwire"
)

// Bounds and defaults of runner.toml.
const (
	DefaultMaxConcurrentJobs = 4
	MaxConcurrentJobs        = 64
	// MaxConfigBytes bounds runner.toml.
	MaxConfigBytes = 256 << 10
	// MaxSkillRoots bounds [skills] roots.
	MaxSkillRoots = 16
)

// Config is runner.toml. Unknown keys are an error.
type Config struct {
	// ClientID is the runner's stable name; its projects are registered
	// as agent:<client_id>:<name>.
	ClientID string            `toml:"client_id"`
	Projects map[string]string `toml:"projects"`
	Policy   Policy            `toml:"policy"`
	SSH      SSH               `toml:"ssh"`
	Skills   Skills            `toml:"skills"`
	MCP      MCP               `toml:"mcp"`
}

// Skills is runner.toml's [skills].
type Skills struct {
	// Roots are directories of this machine holding Agent Skills
	// (<root>/<name>/SKILL.md), listed with every project's own skills as
	// source "runner". Read live: a skill added to a root is listed on
	// the next call.
	Roots []string `toml:"roots"`
}

// MCP is runner.toml's [mcp]: the stdio MCP servers this runner starts
// on demand for its projects ([mcp.providers.NAME], decision 0083).
type MCP struct {
	Providers map[string]mcpprovider.Provider `toml:"providers"`
}

// Policy is runner.toml's [policy].
type Policy struct {
	// AllowedRoots, when set, are the only directories a project may lie
	// in.
	AllowedRoots      []string `toml:"allowed_roots"`
	MaxConcurrentJobs int      `toml:"max_concurrent_jobs"`
	// MaxTimeoutSecs caps a process's timeout (0: runner.MaxTimeout).
	MaxTimeoutSecs int `toml:"max_timeout_secs"`
	// MaxOutputBytes caps the output tail a request may ask for (0:
	// runner.MaxTailBytes).
	MaxOutputBytes int `toml:"max_output_bytes"`
	// Sandbox is the mode for every process (workspace-write by default;
	// "off" is the explicit opt-out that lets an unsandboxed platform run
	// processes at all).
	Sandbox string `toml:"sandbox"`
}

// SSH is runner.toml's [ssh].
type SSH struct {
	Resources map[string]Resource `toml:"resources"`
}

// Resource is one [ssh.resources.NAME]: the name is all the server ever
// learns of it.
type Resource struct {
	Host           string `toml:"host"`
	Port           int    `toml:"port"`
	User           string `toml:"user"`
	IdentityFile   string `toml:"identity_file"`
	KnownHostsFile string `toml:"known_hosts_file"`
	DefaultCwd     string `toml:"default_cwd"`
}

// LoadConfig reads and validates runner.toml at path.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("runner config: %w", err)
	}
	if len(b) > MaxConfigBytes {
		return Config{}, fmt.Errorf("runner config %s: over %d bytes", path, MaxConfigBytes)
	}
	return ParseConfig(b, filepath.Dir(path))
}

// ParseConfig decodes runner.toml strictly and validates it; relative
// project directories are taken from base.
func ParseConfig(b []byte, base string) (Config, error) {
	var c Config
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) {
			return Config{}, fmt.Errorf("runner config: unknown keys:\n%s", strict.String())
		}
		return Config{}, fmt.Errorf("runner config: %w", err)
	}
	for name, dir := range c.Projects {
		if !filepath.IsAbs(dir) {
			c.Projects[name] = filepath.Join(base, dir)
		}
	}
	for i, dir := range c.Skills.Roots {
		if dir != "" && !filepath.IsAbs(dir) {
			c.Skills.Roots[i] = filepath.Join(base, dir)
		}
	}
	if err := c.validate(); err != nil {
		return Config{}, err
	}
	roots := make([]string, 0, len(c.Projects))
	for _, dir := range c.Projects {
		roots = append(roots, dir)
	}
	if err := mcpprovider.Validate(c.MCP.Providers, base, roots); err != nil {
		return Config{}, fmt.Errorf("runner config: %w", err)
	}
	return c, nil
}

func (c *Config) validate() error {
	if !ident.Valid(c.ClientID) {
		return fmt.Errorf("runner config: client_id %q must be 1-64 letters, digits, '.', '_' or '-'", c.ClientID)
	}
	if len(c.Projects) == 0 || len(c.Projects) > runnerwire.MaxProjects {
		return fmt.Errorf("runner config: [projects] must name 1-%d projects", runnerwire.MaxProjects)
	}
	if c.Policy.MaxConcurrentJobs == 0 {
		c.Policy.MaxConcurrentJobs = DefaultMaxConcurrentJobs
	}
	if c.Policy.MaxConcurrentJobs < 1 || c.Policy.MaxConcurrentJobs > MaxConcurrentJobs {
		return fmt.Errorf("runner config: max_concurrent_jobs %d is outside 1..%d", c.Policy.MaxConcurrentJobs, MaxConcurrentJobs)
	}
	if c.Policy.MaxTimeoutSecs < 0 || c.Policy.MaxOutputBytes < 0 {
		return errors.New("runner config: max_timeout_secs and max_output_bytes must not be negative")
	}
	if c.Policy.Sandbox == "" {
		c.Policy.Sandbox = string(runner.WorkspaceWrite)
	}
	if m, err := runner.ParseMode(c.Policy.Sandbox); err != nil || m == runner.Unavailable {
		return fmt.Errorf("runner config: sandbox %q must be workspace-write, read-only or off", c.Policy.Sandbox)
	}
	for i, r := range c.Policy.AllowedRoots {
		real, err := project.CanonicalRoot(r)
		if err != nil {
			return fmt.Errorf("runner config: allowed_roots: %s", err)
		}
		c.Policy.AllowedRoots[i] = real
	}
	for name, dir := range c.Projects {
		if err := project.ValidateName(name); err != nil {
			return fmt.Errorf("runner config: [projects] %v", err)
		}
		real, err := project.CanonicalRoot(dir)
		if err != nil {
			return fmt.Errorf("runner config: [projects] %s: %v", name, err)
		}
		if !c.allowed(real) {
			return fmt.Errorf("runner config: [projects] %s: %s is outside allowed_roots", name, real)
		}
		c.Projects[name] = real
	}
	if len(c.Skills.Roots) > MaxSkillRoots {
		return fmt.Errorf("runner config: [skills] roots names %d directories, at most %d", len(c.Skills.Roots), MaxSkillRoots)
	}
	for i, dir := range c.Skills.Roots {
		real, err := project.CanonicalRoot(dir)
		if err != nil {
			return fmt.Errorf("runner config: [skills] roots[%d]: %v", i, err)
		}
		c.Skills.Roots[i] = real
	}
	if len(c.SSH.Resources) > runnerwire.MaxResources {
		return fmt.Errorf("runner config: at most %d ssh resources", runnerwire.MaxResources)
	}
	for name, r := range c.SSH.Resources {
		if !ident.Valid(name) {
			return fmt.Errorf("runner config: ssh resource name %q is not a valid name", name)
		}
		if r.Host == "" || strings.HasPrefix(r.Host, "-") || strings.ContainsAny(r.Host, " \t\n") {
			return fmt.Errorf("runner config: ssh resource %s: host must be a host name", name)
		}
		if r.Port < 0 || r.Port > 65535 {
			return fmt.Errorf("runner config: ssh resource %s: port %d is outside 1..65535", name, r.Port)
		}
	}
	return nil
}

// allowed reports whether dir lies in one of the allowed roots (every
// directory when none is set).
func (c *Config) allowed(dir string) bool {
	if len(c.Policy.AllowedRoots) == 0 {
		return true
	}
	for _, r := range c.Policy.AllowedRoots {
		if rel, err := filepath.Rel(r, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
