package app

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gateway"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/oauth/accesstoken"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/retention"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/telemetry"
)

// ConfigFile is the name of the configuration file in the data directory.
const ConfigFile = "config.toml"

// DefaultListen is the default listen address.
const DefaultListen = "127.0.0.1:8080"

// Config is the server configuration. Values come from the defaults, then
// config.toml in the data directory, then WEBCODEX_* environment variables,
// then command-line flags.
type Config struct {
	// DataDir holds the databases, the admin credential and config.toml.
	DataDir string `toml:"-"`
	// Listen is the HTTP listen address.
	Listen string `toml:"listen"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `toml:"log_level"`
	// ShutdownTimeout bounds how long in-flight calls may run after a
	// shutdown signal before they are interrupted (seconds in TOML).
	ShutdownTimeout Duration `toml:"shutdown_timeout"`
	// AllowedOrigins lists browser origins allowed to call the API.
	AllowedOrigins []string `toml:"allowed_origins"`
	// PublicURL is the externally visible base URL (an http or https URL,
	// e.g. a tunnel's), published in OpenAPI; its host is accepted by the
	// DNS-rebinding check.
	PublicURL string `toml:"public_url"`
	// RequestsPerPrincipal bounds the HTTP calls one authority group has
	// in flight (0: httpserver.MaxPerPrincipal); as many more wait up to
	// httpserver.RequestQueueWait for a slot before 429.
	RequestsPerPrincipal int `toml:"requests_per_principal"`
	// JobSyncGrace is how long a run waits before it continues as a
	// background job.
	JobSyncGrace Duration `toml:"job_sync_grace"`
	// JobConcurrency bounds the runs executing at once; more are queued.
	JobConcurrency int `toml:"job_concurrency"`
	// JobQueuePerOwner bounds one authority group's queued jobs (0:
	// jobs.DefaultQueuedPerOwner); a further run that would queue fails
	// with queue_full.
	JobQueuePerOwner int `toml:"job_queue_per_owner"`
	// JobRunningPerOwner bounds the runs one authority group executes at
	// once (0: job_concurrency - jobs.ReservedSlots, at least 1; at most
	// job_concurrency); its further runs queue (decision 0048).
	JobRunningPerOwner int `toml:"job_running_per_owner"`
	// Sandbox is the default sandbox mode of the processes agents start:
	// workspace-write (the default), read-only or off (announced at start).
	// A project's own mode (project add --sandbox) takes precedence,
	// except that off here turns the sandbox off for every project.
	Sandbox string `toml:"sandbox"`
	// SandboxNetwork off refuses the sandboxed processes TCP (Landlock ABI
	// >= 4); default on.
	SandboxNetwork string `toml:"sandbox_network"`
	// SandboxExtraWrite lists absolute paths writable under
	// workspace-write besides the project and its temporary directory.
	// The default is the user's cache directory (os.UserCacheDir: the Go
	// build cache, pip's and others live there); set it, even to [], to
	// replace it.
	SandboxExtraWrite []string `toml:"sandbox_extra_write"`
	// ToolProfile is the set of tools MCP tools/list shows besides the
	// gateway tools (list_tools, describe_tool, call_tool): core (the
	// default, the coding loop) or full (every tool). Every tool stays
	// callable through the gateway (decision 0024).
	ToolProfile string `toml:"tool_profile"`
	// ToolList, when set, is the profile: exactly these tools are listed
	// (tool_profile is then ignored). A name that is no tool stops the
	// server at start-up.
	ToolList []string `toml:"tool_list"`
	// OAuth is the [oauth] table.
	OAuth OAuthConfig `toml:"oauth"`
	// Telemetry is the [telemetry] table: OpenTelemetry traces over
	// OTLP/HTTP, off unless an endpoint is set (here or by
	// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
	Telemetry telemetry.Config `toml:"telemetry"`
	// Metrics is the [metrics] table.
	Metrics MetricsConfig `toml:"metrics"`
	// MCP is the [mcp] table: [mcp.providers.NAME], the stdio MCP
	// servers this host starts on demand for its own projects (the
	// mcp_tool tool, decision 0083). Their cwd must be empty (the root of
	// the project a call names): a server's projects are registered at
	// run time.
	MCP MCPConfig `toml:"mcp"`
	// Retention is the [retention] table.
	Retention RetentionConfig `toml:"retention"`
	// DatabaseURL, when set, is the postgres:// URL of the PostgreSQL
	// database that holds every store instead of the data directory's
	// SQLite files, so that several replicas can serve one deployment
	// (decision 0071). Its password (better kept in ~/.pgpass or
	// PGPASSWORD) never appears in a log, banner or status.
	DatabaseURL string `toml:"database_url"`
	// EvidenceKey is the evidence signing key file of a deployment on
	// DatabaseURL ("" = the data directory's evidence.key). Every replica
	// of the deployment is given the same file; the key is never stored
	// in the database.
	EvidenceKey string `toml:"evidence_key"`
	// BootstrapToken is WEBCODEX_TOKEN: an admin credential accepted as is
	// and never stored or logged. Environment only.
	BootstrapToken string `toml:"-"`
}

// MetricsConfig is the [metrics] table (decision 0085).
type MetricsConfig struct {
	// Enabled serves GET /metrics (Prometheus text format, a credential
	// with metrics:read or account:manage) and counts tool calls for it;
	// default true. Off, /metrics answers 404 and calls are not counted.
	// /readyz is served either way.
	Enabled bool `toml:"enabled"`
	// SandboxDenials counts the sandbox's Landlock denials from the
	// kernel's audit read-log for /metrics (Linux; needs CAP_AUDIT_READ,
	// and audit enabled, which WebCodex never turns on); default true.
	// Off, or where it cannot read, webcodex_sandbox_denials_observed is
	// 0 (decision 0088).
	SandboxDenials bool `toml:"sandbox_denials"`
}

// MCPConfig is config.toml's [mcp] table.
type MCPConfig struct {
	Providers map[string]mcpprovider.Provider `toml:"providers"`
}

// OAuthConfig is the [oauth] table: either the built-in authorization
// server (Enabled) or an external one whose JWT access tokens the server
// accepts (Issuer), not both (issue 26).
type OAuthConfig struct {
	// Enabled runs the built-in authorization server: hosted agents enrol
	// (Client ID Metadata Document or Dynamic Client Registration), the
	// signed-in person approves on the console's consent page, and the
	// server issues its own tokens. Its issuer is public_url (else the
	// listen URL).
	Enabled bool `toml:"enabled"`
	// ClientMetadataPrivate lets the built-in server fetch Client ID
	// Metadata Documents from loopback and private addresses (clients on
	// the operator's own network, tests). Off, they are refused: the
	// fetch must not become a way into the server's network.
	ClientMetadataPrivate bool `toml:"client_metadata_private"`
	// ClientMetadataCAFile, when set, is a PEM file of the certificate
	// authorities the built-in server trusts when it fetches client
	// metadata documents, instead of the system's (a private CA on the
	// operator's network, tests).
	ClientMetadataCAFile string `toml:"client_metadata_ca_file"`
	// Issuer is the authorization server's issuer identifier, exactly as
	// its metadata and its tokens' iss name it: an https URL without a
	// trailing slash (http only on a loopback address). Empty: none.
	Issuer string `toml:"issuer"`
	// Audience is the resource identifier the issuer's tokens must name in
	// aud; empty means public_url followed by /mcp (Config.OAuthResource).
	Audience string `toml:"audience"`
}

// RetentionConfig is the [retention] table (decision 0087): how long each
// store keeps what it holds. An unset key keeps forever; a set one must be
// at least 1 (days 1 to retention.MaxDays).
type RetentionConfig struct {
	// SessionEventsDays purges the events of Workflow Sessions closed (and
	// last updated) more than that many days ago; their headers stay.
	SessionEventsDays *int `toml:"session_events_days"`
	// JobOutputDays purges the output files of jobs that finished more
	// than that many days ago.
	JobOutputDays *int `toml:"job_output_days"`
	// JobOutputBytesPerProject purges the oldest finished jobs' output of
	// a project beyond that many bytes.
	JobOutputBytesPerProject *int64 `toml:"job_output_bytes_per_project"`
	// AuditEventsDays purges Action Audit events that ended more than that
	// many days ago; sessions and their counters stay.
	AuditEventsDays *int `toml:"audit_events_days"`
	// EvidencePayloadDays purges evidence payloads older than that many
	// days, keeping leaves and checkpoints (the evidence journal's purge).
	EvidencePayloadDays *int `toml:"evidence_payload_days"`

	// unit, when set, replaces the day as the policies' unit, and
	// interval, when set, retention.Interval between the purger's passes:
	// a seam for the retention soak test only (export_test.go), never
	// settable from config.toml or the environment.
	unit, interval time.Duration
}

// validate checks every set key.
func (r RetentionConfig) validate() error {
	for _, d := range []struct {
		key string
		v   *int
	}{{"session_events_days", r.SessionEventsDays}, {"job_output_days", r.JobOutputDays},
		{"audit_events_days", r.AuditEventsDays}, {"evidence_payload_days", r.EvidencePayloadDays}} {
		if d.v == nil {
			continue
		}
		if err := retention.ValidDays(*d.v); err != nil {
			return &ConfigError{Source: "config", Key: "retention." + d.key, Err: fmt.Errorf("%d %v", *d.v, err)}
		}
	}
	if b := r.JobOutputBytesPerProject; b != nil && *b < 1 {
		return &ConfigError{Source: "config", Key: "retention.job_output_bytes_per_project", Err: fmt.Errorf("%d must be a positive number of bytes (leave it unset to keep everything)", *b)}
	}
	return nil
}

// policies are the keys set, as "key=value", in the table's order.
func (r RetentionConfig) policies() []string {
	out := []string{}
	add := func(key string, v any) { out = append(out, fmt.Sprintf("%s=%v", key, v)) }
	if r.SessionEventsDays != nil {
		add("session_events_days", *r.SessionEventsDays)
	}
	if r.JobOutputDays != nil {
		add("job_output_days", *r.JobOutputDays)
	}
	if r.JobOutputBytesPerProject != nil {
		add("job_output_bytes_per_project", *r.JobOutputBytesPerProject)
	}
	if r.AuditEventsDays != nil {
		add("audit_events_days", *r.AuditEventsDays)
	}
	if r.EvidencePayloadDays != nil {
		add("evidence_payload_days", *r.EvidencePayloadDays)
	}
	return out
}

// evidenceKeyFile is the evidence signing key file of a deployment on
// DatabaseURL: EvidenceKey, else the data directory's.
func (c Config) evidenceKeyFile() string {
	if c.EvidenceKey != "" {
		return c.EvidenceKey
	}
	return filepath.Join(c.DataDir, evidence.KeyFile)
}

// OAuthResource returns the resource identifier access tokens must be
// issued for: [oauth] audience, else public_url's /mcp, else "" (no public
// URL).
func (c Config) OAuthResource() string {
	if c.OAuth.Audience != "" {
		return c.OAuth.Audience
	}
	if c.PublicURL == "" {
		return ""
	}
	return strings.TrimSuffix(c.PublicURL, "/") + "/mcp"
}

// OAuthVerifier returns the verifier of the external issuer's access tokens
// ([oauth] issuer, for OAuthResource), or nil when no issuer is configured.
// It fetches nothing until its first token. Errors: those of
// accesstoken.New (Validate has already refused them).
func (c Config) OAuthVerifier() (*accesstoken.Verifier, error) {
	if c.OAuth.Issuer == "" {
		return nil, nil
	}
	return accesstoken.New(accesstoken.Config{Issuer: c.OAuth.Issuer, Resource: c.OAuthResource()})
}

// CredentialEnv returns the names of the environment variables whose values
// are credentials the server accepts (WEBCODEX_TOKEN). serve and mcp take
// them out of their process environment at start and keep them in memory
// only (docs/decisions/0019-no-credentials-in-the-server-environment.md).
func CredentialEnv() []string { return []string{"WEBCODEX_TOKEN"} }

// Duration is a time.Duration written in TOML as a Go duration string
// ("15s") or a number of seconds.
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	s := string(b)
	if n, err := strconv.Atoi(s); err == nil {
		*d = Duration(time.Duration(n) * time.Second)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// DefaultConfig returns the built-in defaults.
func DefaultConfig() Config {
	return Config{
		DataDir:           DefaultDataDir(),
		Listen:            DefaultListen,
		LogLevel:          "info",
		ShutdownTimeout:   Duration(15 * time.Second),
		JobSyncGrace:      Duration(8 * time.Second),
		JobConcurrency:    4,
		Sandbox:           string(runner.WorkspaceWrite),
		SandboxNetwork:    string(runner.NetworkOn),
		SandboxExtraWrite: defaultExtraWrite(),
		ToolProfile:       gateway.Core,
		Telemetry:         telemetry.DefaultConfig(),
		Metrics:           MetricsConfig{Enabled: true, SandboxDenials: true},
	}
}

// defaultExtraWrite is the user's cache directory, when there is one.
func defaultExtraWrite() []string {
	if d, err := os.UserCacheDir(); err == nil && filepath.IsAbs(d) {
		return []string{d}
	}
	return nil
}

// DefaultDataDir is $WEBCODEX_DATA, else $XDG_DATA_HOME/webcodex, else
// ~/.local/share/webcodex.
func DefaultDataDir() string {
	if d := os.Getenv("WEBCODEX_DATA"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "webcodex")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".", ".webcodex")
	}
	return filepath.Join(home, ".local", "share", "webcodex")
}

// ConfigError reports an invalid configuration value.
type ConfigError struct {
	Source string // "config.toml" or the environment variable
	Key    string
	Err    error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("config: %s: %s: %v", e.Source, e.Key, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// LoadConfig builds the configuration for dataDir: defaults, then
// dataDir/config.toml if it exists (unknown keys are an error naming the
// key), then the environment (getenv, usually os.Getenv).
func LoadConfig(dataDir string, getenv func(string) string) (Config, error) {
	cfg := DefaultConfig()
	if dataDir != "" {
		cfg.DataDir = dataDir
	}
	path := filepath.Join(cfg.DataDir, ConfigFile)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return Config{}, &ConfigError{Source: path, Key: "(file)", Err: err}
	default:
		dec := toml.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			var strict *toml.StrictMissingError
			if errors.As(err, &strict) && len(strict.Errors) > 0 {
				keys := make([]string, 0, len(strict.Errors))
				for _, e := range strict.Errors {
					keys = append(keys, strings.Join(e.Key(), "."))
				}
				return Config{}, &ConfigError{Source: path, Key: strings.Join(keys, ", "), Err: errors.New("unknown configuration key")}
			}
			var bad *toml.DecodeError
			if errors.As(err, &bad) && len(bad.Key()) > 0 {
				return Config{}, &ConfigError{Source: path, Key: strings.Join(bad.Key(), "."), Err: err}
			}
			return Config{}, &ConfigError{Source: path, Key: "(syntax)", Err: err}
		}
	}
	if err := cfg.applyEnv(getenv); err != nil {
		return Config{}, err
	}
	return cfg, cfg.Validate()
}

func (c *Config) applyEnv(getenv func(string) string) error {
	// The standard OpenTelemetry variables win over [telemetry].
	if v := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		c.Telemetry.Endpoint = v
	}
	if v := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		c.Telemetry.TracesEndpoint = v
	}
	// Header by header: [telemetry] headers, then the general variable,
	// then the traces one. A refused value is named, never shown.
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if v := getenv(name); v != "" {
			h, err := telemetry.ParseHeaders(v)
			if err != nil {
				return &ConfigError{Source: "environment", Key: name, Err: err}
			}
			c.Telemetry.Headers = telemetry.MergeHeaders(c.Telemetry.Headers, h)
		}
	}
	if v := getenv("WEBCODEX_LISTEN"); v != "" {
		c.Listen = v
	}
	if v := getenv("WEBCODEX_LOG_LEVEL"); v != "" {
		c.LogLevel = v
	}
	if v := getenv("WEBCODEX_SHUTDOWN_TIMEOUT"); v != "" {
		if err := c.ShutdownTimeout.UnmarshalText([]byte(v)); err != nil {
			return &ConfigError{Source: "environment", Key: "WEBCODEX_SHUTDOWN_TIMEOUT", Err: err}
		}
	}
	if v := getenv("WEBCODEX_ALLOWED_ORIGINS"); v != "" {
		c.AllowedOrigins = nil
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				c.AllowedOrigins = append(c.AllowedOrigins, o)
			}
		}
	}
	if v := getenv("WEBCODEX_JOB_SYNC_GRACE"); v != "" {
		if err := c.JobSyncGrace.UnmarshalText([]byte(v)); err != nil {
			return &ConfigError{Source: "environment", Key: "WEBCODEX_JOB_SYNC_GRACE", Err: err}
		}
	}
	if v := getenv("WEBCODEX_JOB_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return &ConfigError{Source: "environment", Key: "WEBCODEX_JOB_CONCURRENCY", Err: err}
		}
		c.JobConcurrency = n
	}
	if v := getenv("WEBCODEX_JOB_QUEUE_PER_OWNER"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return &ConfigError{Source: "environment", Key: "WEBCODEX_JOB_QUEUE_PER_OWNER", Err: err}
		}
		c.JobQueuePerOwner = n
	}
	if v := getenv("WEBCODEX_JOB_RUNNING_PER_OWNER"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return &ConfigError{Source: "environment", Key: "WEBCODEX_JOB_RUNNING_PER_OWNER", Err: err}
		}
		c.JobRunningPerOwner = n
	}
	if v := getenv("WEBCODEX_TOOL_PROFILE"); v != "" {
		c.ToolProfile = v
	}
	if v := getenv("WEBCODEX_PUBLIC_URL"); v != "" {
		c.PublicURL = v
	}
	if v := getenv("WEBCODEX_OAUTH"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return &ConfigError{Source: "environment", Key: "WEBCODEX_OAUTH", Err: err}
		}
		c.OAuth.Enabled = b
	}
	if v := getenv("WEBCODEX_REQUESTS_PER_PRINCIPAL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return &ConfigError{Source: "environment", Key: "WEBCODEX_REQUESTS_PER_PRINCIPAL", Err: err}
		}
		c.RequestsPerPrincipal = n
	}
	c.BootstrapToken = getenv("WEBCODEX_TOKEN")
	return nil
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return &ConfigError{Source: "config", Key: "listen", Err: fmt.Errorf("%q is not host:port", c.Listen)}
	}
	if _, err := c.SlogLevel(); err != nil {
		return &ConfigError{Source: "config", Key: "log_level", Err: err}
	}
	if c.ShutdownTimeout < 0 {
		return &ConfigError{Source: "config", Key: "shutdown_timeout", Err: errors.New("must not be negative")}
	}
	if c.JobSyncGrace < 0 || time.Duration(c.JobSyncGrace) > time.Minute {
		return &ConfigError{Source: "config", Key: "job_sync_grace", Err: errors.New("must be between 0 and 1m")}
	}
	if c.JobConcurrency < 1 || c.JobConcurrency > 64 {
		return &ConfigError{Source: "config", Key: "job_concurrency", Err: errors.New("must be 1-64")}
	}
	if c.JobQueuePerOwner < 0 || c.JobQueuePerOwner > jobs.MaxQueuedPerOwner {
		return &ConfigError{Source: "config", Key: "job_queue_per_owner", Err: fmt.Errorf("must be 1-%d", jobs.MaxQueuedPerOwner)}
	}
	if c.JobRunningPerOwner < 0 || c.JobRunningPerOwner > c.JobConcurrency {
		return &ConfigError{Source: "config", Key: "job_running_per_owner", Err: errors.New("must be 1 to job_concurrency (0 is the default)")}
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return &ConfigError{Source: "config", Key: "public_url", Err: fmt.Errorf("%q is not an http(s) URL such as https://name.example", c.PublicURL)}
		}
	}
	if c.DatabaseURL != "" {
		if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return &ConfigError{Source: "config", Key: "database_url", Err: fmt.Errorf("%q is not a postgres:// URL", pgdb.Redact(c.DatabaseURL))}
		}
	}
	switch {
	case c.EvidenceKey == "":
	case c.DatabaseURL == "":
		return &ConfigError{Source: "config", Key: "evidence_key", Err: errors.New("needs database_url (a data directory's journal keeps its key beside it)")}
	case !filepath.IsAbs(c.EvidenceKey):
		return &ConfigError{Source: "config", Key: "evidence_key", Err: fmt.Errorf("%q is not an absolute path", c.EvidenceKey)}
	}
	if c.RequestsPerPrincipal < 0 || c.RequestsPerPrincipal > httpserver.MaxConcurrent {
		return &ConfigError{Source: "config", Key: "requests_per_principal", Err: fmt.Errorf("must be 1-%d", httpserver.MaxConcurrent)}
	}
	if m, err := runner.ParseMode(c.Sandbox); err != nil || m == "" {
		return &ConfigError{Source: "config", Key: "sandbox", Err: fmt.Errorf("%q is not workspace-write, read-only or off", c.Sandbox)}
	}
	if n, err := runner.ParseNetwork(c.SandboxNetwork); err != nil || n == "" {
		return &ConfigError{Source: "config", Key: "sandbox_network", Err: fmt.Errorf("%q is not on or off", c.SandboxNetwork)}
	}
	for _, p := range c.SandboxExtraWrite {
		if !filepath.IsAbs(p) {
			return &ConfigError{Source: "config", Key: "sandbox_extra_write", Err: fmt.Errorf("%q is not an absolute path", p)}
		}
	}
	if c.ToolProfile != gateway.Core && c.ToolProfile != gateway.Full {
		return &ConfigError{Source: "config", Key: "tool_profile", Err: fmt.Errorf("%q is not core or full", c.ToolProfile)}
	}
	if err := c.validateOAuth(); err != nil {
		return err
	}
	if fe, ok := errors.AsType[*telemetry.FieldError](c.Telemetry.Validate()); ok {
		return &ConfigError{Source: "config", Key: "telemetry." + fe.Key, Err: fe.Err}
	}
	if err := mcpprovider.Validate(c.MCP.Providers, c.DataDir, nil); err != nil {
		return &ConfigError{Source: "config", Key: "mcp.providers", Err: err}
	}
	if err := c.Retention.validate(); err != nil {
		return err
	}
	if c.BootstrapToken != "" && len(c.BootstrapToken) < 16 {
		return &ConfigError{Source: "environment", Key: "WEBCODEX_TOKEN", Err: errors.New("must be at least 16 characters")}
	}
	return nil
}

// validateOAuth checks the [oauth] table: an issuer accesstoken accepts and
// a resource to verify tokens for.
func (c Config) validateOAuth() error {
	if c.OAuth.Enabled && c.OAuth.Issuer != "" {
		return &ConfigError{Source: "config", Key: "oauth.enabled", Err: errors.New("the built-in authorization server and an external oauth.issuer cannot both be configured")}
	}
	if c.OAuth.ClientMetadataPrivate && !c.OAuth.Enabled {
		return &ConfigError{Source: "config", Key: "oauth.client_metadata_private", Err: errors.New("is set without oauth.enabled")}
	}
	if c.OAuth.ClientMetadataCAFile != "" && !c.OAuth.Enabled {
		return &ConfigError{Source: "config", Key: "oauth.client_metadata_ca_file", Err: errors.New("is set without oauth.enabled")}
	}
	if c.OAuth.Issuer == "" {
		if c.OAuth.Audience != "" {
			return &ConfigError{Source: "config", Key: "oauth.audience", Err: errors.New("is set without oauth.issuer")}
		}
		return nil
	}
	if err := accesstoken.ValidIssuer(c.OAuth.Issuer); err != nil {
		return &ConfigError{Source: "config", Key: "oauth.issuer", Err: errors.New(failure.MessageOf(err))}
	}
	if c.OAuth.Audience != "" {
		u, err := url.Parse(c.OAuth.Audience)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
			return &ConfigError{Source: "config", Key: "oauth.audience", Err: fmt.Errorf("%q is not an http(s) URL such as https://name.example/mcp", c.OAuth.Audience)}
		}
	}
	if c.OAuthResource() == "" {
		return &ConfigError{Source: "config", Key: "oauth.issuer", Err: errors.New("needs public_url (or oauth.audience): tokens are verified for that resource")}
	}
	return nil
}

// SandboxPolicy returns the sandbox policy of the configuration: its mode,
// network and extra paths, with the data directory (databases, keys, the
// admin token and config.toml) denied to every sandboxed child.
func (c Config) SandboxPolicy() *runner.Policy {
	return &runner.Policy{
		Mode: runner.Mode(c.Sandbox), Network: runner.Network(c.SandboxNetwork),
		Deny: []string{c.DataDir}, ExtraWrite: c.SandboxExtraWrite,
		// Managed worktrees are projects: reachable like any other.
		Allow: []string{WorktreesDir(c.DataDir)},
	}
}

// SlogLevel returns the configured log level.
func (c Config) SlogLevel() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return 0, fmt.Errorf("%q is not debug, info, warn or error", c.LogLevel)
	}
	return l, nil
}

// PublicHosts returns the host name of PublicURL (none when unset), which
// the DNS-rebinding check accepts besides loopback names.
func (c Config) PublicHosts() []string {
	u, err := url.Parse(c.PublicURL)
	if c.PublicURL == "" || err != nil || u.Hostname() == "" {
		return nil
	}
	return []string{u.Hostname()}
}

// Loopback reports whether Listen binds only a loopback address.
func (c Config) Loopback() bool {
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
