package runnerwire

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/webcodex/webcodex/internal/ident"
)

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrFrame}, args...)...)
}

// Hello is the runner's first frame.
type Hello struct {
	// Major and Minor are the runner's protocol version.
	Major int `json:"major"`
	Minor int `json:"minor"`
	// ClientID is the runner's stable name; it must be the client id its
	// token was issued for.
	ClientID string `json:"client_id"`
	// InstanceID is new for every runner process: a hello with another
	// instance id than the last one means the runner restarted, and what
	// the previous instance ran is lost.
	InstanceID string `json:"instance_id"`
	// Version is the runner's build version, for display.
	Version string `json:"version"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	// Sandbox is the sandbox in force for the runner's processes
	// (workspace-write, read-only, off, unavailable).
	Sandbox      string    `json:"sandbox"`
	Capabilities []string  `json:"capabilities"`
	Projects     []Project `json:"projects"`
	// Resources are the names of the runner's SSH resources; nothing else
	// about them leaves the runner.
	Resources []string `json:"resources"`
	// Processes is the runner's inventory of the processes it runs or
	// finished for the server, at most MaxInventory.
	Processes         []Inventory `json:"processes"`
	MaxConcurrentJobs int         `json:"max_concurrent_jobs"`
}

// A Project is one project a runner serves: its name (the server registers
// it as agent:<client_id>:<name>) and its root on the runner's machine.
type Project struct {
	Name string `json:"name"`
	Root string `json:"root"`
}

// Inventory is one process a runner holds for the server: its run id and
// whether it runs (ProcRunning) or finished unreleased (ProcExited).
type Inventory struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

// Validate checks a hello's bounds and shapes. The version is checked by
// the server against its own (Compatible) so that the refusal can name
// both.
func (h *Hello) Validate() error {
	switch {
	case !ident.Valid(h.ClientID):
		return bad("client_id %q is not a valid name", h.ClientID)
	case h.InstanceID == "" || len(h.InstanceID) > MaxNameBytes:
		return bad("instance_id must be 1-%d bytes", MaxNameBytes)
	case len(h.Version) > MaxNameBytes || len(h.OS) > MaxNameBytes || len(h.Arch) > MaxNameBytes || len(h.Sandbox) > MaxNameBytes:
		return bad("version, os, arch and sandbox are at most %d bytes", MaxNameBytes)
	case len(h.Capabilities) > MaxCapabilities:
		return bad("%d capabilities, at most %d", len(h.Capabilities), MaxCapabilities)
	case len(h.Projects) > MaxProjects:
		return bad("%d projects, at most %d", len(h.Projects), MaxProjects)
	case len(h.Resources) > MaxResources:
		return bad("%d resources, at most %d", len(h.Resources), MaxResources)
	case len(h.Processes) > MaxInventory:
		return bad("%d inventory entries, at most %d", len(h.Processes), MaxInventory)
	case h.MaxConcurrentJobs < 1 || h.MaxConcurrentJobs > 64:
		return bad("max_concurrent_jobs %d is outside 1..64", h.MaxConcurrentJobs)
	}
	for _, c := range h.Capabilities {
		if c == "" || len(c) > MaxNameBytes {
			return bad("a capability name must be 1-%d bytes", MaxNameBytes)
		}
	}
	seen := map[string]bool{}
	for _, p := range h.Projects {
		if !ident.Valid(p.Name) {
			return bad("project name %q is not a valid name", p.Name)
		}
		if seen[p.Name] {
			return bad("project %q is announced twice", p.Name)
		}
		seen[p.Name] = true
		if !absolute(p.Root) || len(p.Root) > 4096 {
			return bad("project %q: root must be an absolute path", p.Name)
		}
	}
	for _, r := range h.Resources {
		if !ident.Valid(r) {
			return bad("resource name %q is not a valid name", r)
		}
	}
	for _, p := range h.Processes {
		if p.ID == "" || len(p.ID) > MaxBinaryIDBytes || (p.State != ProcRunning && p.State != ProcExited) {
			return bad("an inventory entry needs a run id of 1-%d bytes and a state running or exited", MaxBinaryIDBytes)
		}
	}
	return nil
}

// absolute reports whether p is an absolute path on some platform: a slash
// path, or a Windows drive path (the server may run on another OS than the
// runner).
func absolute(p string) bool {
	if strings.ContainsRune(p, 0) {
		return false
	}
	if path.IsAbs(p) {
		return true
	}
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') &&
		(p[0] >= 'A' && p[0] <= 'Z' || p[0] >= 'a' && p[0] <= 'z')
}

// Compatible reports whether a peer speaking major can talk to this side,
// with a message naming both versions when not.
func Compatible(major, minor int) error {
	if major != Major {
		return fmt.Errorf("runner protocol %d.%d is not compatible with the server's %d.%d", major, minor, Major, Minor)
	}
	return nil
}

// Welcome accepts a hello.
type Welcome struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
	// HeartbeatSeconds is how often the runner must send a heartbeat.
	HeartbeatSeconds int `json:"heartbeat_seconds"`
	// Projects are the ids the server registered, in hello order.
	Projects []string `json:"projects"`
}

// Validate implements the body contract.
func (w *Welcome) Validate() error {
	if w.HeartbeatSeconds < 1 || w.HeartbeatSeconds > 3600 {
		return bad("heartbeat_seconds %d is outside 1..3600", w.HeartbeatSeconds)
	}
	if len(w.Projects) > MaxProjects {
		return bad("%d projects, at most %d", len(w.Projects), MaxProjects)
	}
	return nil
}

// Reject codes. A runner stops on RejectAuth and RejectVersion; it retries
// the others with backoff.
const (
	RejectAuth        = "auth"
	RejectVersion     = "version"
	RejectConflict    = "conflict"
	RejectRateLimited = "rate_limited"
	RejectInvalid     = "invalid"
)

// Reject refuses a hello.
type Reject struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfterSeconds, when positive, is how long the runner waits.
	RetryAfterSeconds int `json:"retry_after_seconds,omitempty"`
}

// Validate implements the body contract.
func (r *Reject) Validate() error {
	switch r.Code {
	case RejectAuth, RejectVersion, RejectConflict, RejectRateLimited, RejectInvalid:
	default:
		return bad("unknown reject code %q", r.Code)
	}
	if len(r.Message) > MaxMessageBytes {
		return bad("message over %d bytes", MaxMessageBytes)
	}
	return nil
}

// Fatal reports whether a runner must stop on r rather than retry.
func (r *Reject) Fatal() bool { return r.Code == RejectAuth || r.Code == RejectVersion }

// Request asks the runner to run one operation on one of its projects.
type Request struct {
	// Op names the operation ("proc.start" or an operation a tool
	// declares).
	Op string `json:"op"`
	// Project is the project's name on the runner (not the server's id);
	// empty for the operations on a process (attach, release), which
	// name it by run id.
	Project string          `json:"project"`
	Args    json.RawMessage `json:"args"`
}

// Validate implements the body contract.
func (r *Request) Validate() error {
	switch {
	case r.Op == "" || len(r.Op) > MaxNameBytes:
		return bad("op must be 1-%d bytes", MaxNameBytes)
	case r.Project != "" && !ident.Valid(r.Project):
		return bad("project %q is not a valid name", r.Project)
	}
	return nil
}

// Error is a failure carried on the wire: a stable kind of package failure
// and its caller-safe message and detail.
type Error struct {
	Kind    string         `json:"kind"`
	Message string         `json:"message"`
	Detail  map[string]any `json:"detail,omitempty"`
}

// Response answers one request with an error or a result (a runner sends
// results as binary messages; see EncodeBinary).
type Response struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Validate implements the body contract.
func (r *Response) Validate() error {
	if (r.Error == nil) == (len(r.Result) == 0) {
		return bad("a response carries exactly one of result and error")
	}
	if r.Error != nil && (r.Error.Kind == "" || len(r.Error.Kind) > MaxNameBytes || len(r.Error.Message) > MaxMessageBytes) {
		return bad("an error needs a kind of 1-%d bytes and a message of at most %d", MaxNameBytes, MaxMessageBytes)
	}
	return nil
}

// Streams of an Output frame.
const (
	Stdout = "stdout"
	Stderr = "stderr"
	// Report carries the file a process start collects
	// (ProcStart.Collect), after the process ended.
	Report = "report"
)

// Output is a chunk of a started process's output, sent as a binary
// message (BinOutput). Offset is the chunk's position in its stream;
// chunks of a stream arrive in order and contiguous.
type Output struct {
	Stream string `json:"stream"`
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"`
}

// Validate implements the body contract.
func (o *Output) Validate() error {
	switch {
	case o.Stream != Stdout && o.Stream != Stderr && o.Stream != Report:
		return bad("unknown stream %q", o.Stream)
	case o.Offset < 0:
		return bad("negative offset")
	case len(o.Data) == 0 || len(o.Data) > MaxBinaryDataBytes:
		return bad("a chunk holds 1-%d bytes", MaxBinaryDataBytes)
	}
	return nil
}

// Heartbeat is the runner's periodic liveness report.
type Heartbeat struct {
	Processes int `json:"processes"`
}

// Validate implements the body contract.
func (h *Heartbeat) Validate() error {
	if h.Processes < 0 || h.Processes > MaxInventory {
		return bad("processes %d is outside 0..%d", h.Processes, MaxInventory)
	}
	return nil
}
