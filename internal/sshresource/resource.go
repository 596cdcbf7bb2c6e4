// Package sshresource is the runner's SSH layer: a named SSH resource from
// runner.toml (`[ssh.resources.NAME]`), the argv of the system OpenSSH
// client (`ssh`) that runs one command on it, and the ControlMaster
// connections that let many one-shot commands share one authenticated
// connection.
//
// Security properties, each enforced by the argv this package builds:
//   - strict host key checking against the resource's own known_hosts_file
//     only (no global file, no trust on first use, no host key updates);
//   - batch mode: no password, passphrase or host-key prompt ever; only
//     the resource's identity_file is offered (IdentitiesOnly);
//   - no agent forwarding, no X11 forwarding, no port forwardings;
//   - no user or system ssh_config (`-F` the null device).
//
// Only a resource's Name may be stored in a record or shown to a caller:
// errors from this package name the resource and never its host, user,
// key, known_hosts file, ssh's own output or the master's state.
//
// The package never runs a user command itself: Argv and Master.Argv
// return the argv of one `ssh` invocation, which the runner starts like
// any other process (its containment, environment, timeout and output
// bounds apply). It does own the ControlMaster processes it starts (see
// Master and Pool).
package sshresource

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds and fixed values of a resource and of one command.
const (
	// MaxNameBytes bounds a resource name ([a-z0-9_-]{1,MaxNameBytes}).
	MaxNameBytes = 64
	// MaxHostBytes bounds a host name or address (a DNS name's limit).
	MaxHostBytes = 253
	// MaxUserBytes bounds a remote user name.
	MaxUserBytes = 64
	// DefaultPort is the port of a resource that sets none.
	DefaultPort = 22
	// MaxPort is the highest TCP port.
	MaxPort = 65535
	// MaxPathBytes bounds identity_file, known_hosts_file and a remote
	// working directory.
	MaxPathBytes = 4096
	// MaxCommandBytes bounds the shell text of one remote command; it is
	// the run_shell bound (command.MaxShellBytes).
	MaxCommandBytes = 16000
	// ConnectTimeout bounds the TCP connect and SSH handshake of one
	// connection (ssh's ConnectTimeout, whole seconds).
	ConnectTimeout = 10 * time.Second
	// ServerAliveInterval is how often ssh probes a silent server;
	// after ServerAliveCountMax unanswered probes it drops the
	// connection, so a dead host is noticed within about 45 s.
	ServerAliveInterval = 15 * time.Second
	// ServerAliveCountMax is the number of unanswered keepalives
	// before ssh gives up on a connection.
	ServerAliveCountMax = 3
	// ExitConnectionFailed is the exit status ssh uses for its own
	// failures (connection, host key, authentication, a lost master).
	// A remote command can exit 255 too; see Classify.
	ExitConnectionFailed = 255
)

// Program is the OpenSSH client the argv names; it is looked up in PATH.
const Program = "ssh"

var (
	nameRE = regexp.MustCompile(`^[a-z0-9_-]+$`)
	// A host name, an IPv4 address or an IPv6 literal without brackets.
	// '@', '/', '[' and whitespace are refused so that ssh can never read
	// the destination as user@host or an ssh:// URI.
	hostRE = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)
	userRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)
)

// Resource is one `[ssh.resources.NAME]` entry of runner.toml. Name is the
// only field that may be stored in a record or shown to a caller.
type Resource struct {
	// Name is the resource's identifier, the key NAME.
	Name string
	// Host is the host name or address (host).
	Host string
	// Port is the TCP port (port); 0 means DefaultPort.
	Port int
	// User is the remote login name (user).
	User string
	// IdentityFile is the absolute path of the private key (identity_file);
	// it must not need a passphrase (nothing ever prompts for one).
	IdentityFile string
	// KnownHostsFile is the absolute path of the known_hosts file holding
	// the host's key (known_hosts_file); it is the only file ssh trusts
	// and is never written.
	KnownHostsFile string
	// DefaultCwd is the remote working directory when neither the call nor
	// the session names one (default_cwd); absolute or empty (the login
	// directory).
	DefaultCwd string
}

// ValidName reports whether name is a valid resource name.
func ValidName(name string) bool {
	return len(name) >= 1 && len(name) <= MaxNameBytes && nameRE.MatchString(name)
}

// Validate checks r. Every failure is failure.InvalidArguments; its message
// names the resource (when the name itself is valid) and the key at fault,
// never the offending value. identity_file and known_hosts_file must exist
// as regular files.
func (r Resource) Validate() error {
	if !ValidName(r.Name) {
		return failure.New(failure.InvalidArguments, "an ssh resource name must be 1 to %d characters of a-z, 0-9, '_' and '-'", MaxNameBytes)
	}
	bad := func(format string, args ...any) error {
		return failure.New(failure.InvalidArguments, "ssh resource %q: "+format, append([]any{r.Name}, args...)...)
	}
	switch {
	case r.Host == "":
		return bad("host is required")
	case len(r.Host) > MaxHostBytes:
		return bad("host is longer than %d bytes", MaxHostBytes)
	case strings.HasPrefix(r.Host, "-") || !hostRE.MatchString(r.Host):
		return bad("host must be a host name or an address (letters, digits, '.', '-', '_', ':'; not starting with '-')")
	}
	if r.Port < 0 || r.Port > MaxPort {
		return bad("port must be 1 to %d (or unset for %d)", MaxPort, DefaultPort)
	}
	switch {
	case r.User == "":
		return bad("user is required")
	case len(r.User) > MaxUserBytes || !userRE.MatchString(r.User):
		return bad("user must be 1 to %d characters of letters, digits, '_', '.' and '-', not starting with '-' or '.'", MaxUserBytes)
	}
	if err := checkLocalFile(r.IdentityFile); err != "" {
		return bad("identity_file %s", err)
	}
	if err := checkLocalFile(r.KnownHostsFile); err != "" {
		return bad("known_hosts_file %s", err)
	}
	if r.DefaultCwd != "" {
		if err := checkCwd(r.DefaultCwd); err != nil {
			return bad("default_cwd %s", failure.MessageOf(err))
		}
		if !path.IsAbs(r.DefaultCwd) {
			return bad("default_cwd must be an absolute remote path")
		}
	}
	return nil
}

// EffectivePort is r.Port, or DefaultPort when it is unset.
func (r Resource) EffectivePort() int {
	if r.Port == 0 {
		return DefaultPort
	}
	return r.Port
}

// checkLocalFile returns why p is not an acceptable identity or
// known_hosts path, or "". Characters OpenSSH's option parser would
// reinterpret (whitespace, quotes, '#', '%' tokens) are refused rather than
// escaped.
func checkLocalFile(p string) string {
	switch {
	case p == "":
		return "is required"
	case len(p) > MaxPathBytes:
		return "is longer than " + strconv.Itoa(MaxPathBytes) + " bytes"
	case !filepath.IsAbs(p):
		return "must be an absolute path"
	case strings.ContainsFunc(p, func(c rune) bool {
		return c < 0x20 || c == 0x7f || c == ' ' || strings.ContainsRune(`%"'#`, c)
	}):
		return "must not contain whitespace, control characters, quotes, '#' or '%'"
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "does not exist or cannot be read"
	}
	if !fi.Mode().IsRegular() {
		return "is not a regular file"
	}
	return ""
}

// checkCwd checks a remote working directory of any origin.
func checkCwd(cwd string) error {
	switch {
	case len(cwd) > MaxPathBytes:
		return failure.New(failure.InvalidArguments, "is longer than %d bytes", MaxPathBytes)
	case strings.ContainsRune(cwd, 0):
		return failure.New(failure.InvalidArguments, "must not contain a NUL byte")
	case strings.HasPrefix(cwd, "-"):
		return failure.New(failure.InvalidArguments, "must not start with '-'")
	}
	return nil
}

// RemoteCwd returns the remote working directory of one command: the
// call's own cwd, else the Workflow Session's default_cwd, else the
// resource's default_cwd, else "" (the login directory).
func RemoteCwd(perCall, sessionDefault, resourceDefault string) string {
	for _, c := range []string{perCall, sessionDefault, resourceDefault} {
		if c != "" {
			return c
		}
	}
	return ""
}

// Quote returns s as one POSIX shell word: single-quoted, each embedded
// single quote written as close quote, backslash, quote, open quote. Any
// POSIX shell takes the result literally.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// RemoteCommand returns the single shell string sshd hands to the remote
// login shell (which must be a POSIX shell): command itself when cwd is
// empty, else `cd '<cwd>' && eval '<command>'`. The command goes through
// eval, quoted, so that a failed cd stops all of it: with a bare
// `cd dir && text`, the second line of a multi-line text would still run,
// in the login directory. Errors (failure.InvalidArguments): an empty
// command, one longer than MaxCommandBytes, a NUL byte, or a bad cwd
// (longer than MaxPathBytes, a NUL byte, a leading '-').
func RemoteCommand(cwd, command string) (string, error) {
	switch {
	case command == "":
		return "", failure.New(failure.InvalidArguments, "the remote command is empty")
	case len(command) > MaxCommandBytes:
		return "", failure.New(failure.InvalidArguments, "the remote command is longer than %d bytes", MaxCommandBytes)
	case strings.ContainsRune(command, 0):
		return "", failure.New(failure.InvalidArguments, "the remote command contains a NUL byte")
	}
	if cwd == "" {
		return command, nil
	}
	if err := checkCwd(cwd); err != nil {
		return "", failure.New(failure.InvalidArguments, "the remote cwd %s", failure.MessageOf(err))
	}
	return "cd " + Quote(cwd) + " && eval " + Quote(command), nil
}

// options returns the client options every invocation on r shares, up to
// (not including) the "--" before the destination.
func (r Resource) options() []string {
	return []string{
		Program,
		"-F", os.DevNull,
		"-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile=" + r.KnownHostsFile,
		"-o", "GlobalKnownHostsFile=" + os.DevNull,
		"-o", "UpdateHostKeys=no",
		"-o", "IdentitiesOnly=yes",
		"-i", r.IdentityFile,
		"-o", "PreferredAuthentications=publickey",
		"-a", "-o", "ForwardAgent=no",
		"-x", "-o", "ForwardX11=no",
		"-o", "ClearAllForwardings=yes",
		"-o", "ConnectTimeout=" + seconds(ConnectTimeout),
		"-o", "ServerAliveInterval=" + seconds(ServerAliveInterval),
		"-o", "ServerAliveCountMax=" + strconv.Itoa(ServerAliveCountMax),
		"-o", "LogLevel=ERROR",
		"-T",
		"-p", strconv.Itoa(r.EffectivePort()),
		"-l", r.User,
	}
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

// Argv returns the argv of one command on r over its own connection (no
// master): the options above, "--", the host and remote, which is the
// result of RemoteCommand. It validates r (failure.InvalidArguments).
func (r Resource) Argv(remote string) ([]string, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if remote == "" || strings.ContainsRune(remote, 0) {
		return nil, failure.New(failure.InvalidArguments, "ssh resource %q: the remote command is empty or contains a NUL byte", r.Name)
	}
	return append(r.options(), "--", r.Host, remote), nil
}

// ClientEnv returns env without the variables through which an ssh client
// could reach an agent or a prompt (SSH_AUTH_SOCK, SSH_AGENT_PID,
// SSH_ASKPASS, SSH_ASKPASS_REQUIRE, DISPLAY): the runner starts every
// `ssh` this package describes with it, so that neither the agent nor an
// askpass program is ever consulted, whatever the argv.
func ClientEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "SSH_AUTH_SOCK", "SSH_AGENT_PID", "SSH_ASKPASS", "SSH_ASKPASS_REQUIRE", "DISPLAY":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Classify turns the stderr of an ssh invocation that exited with
// ExitConnectionFailed into a caller-safe error naming only the resource:
// failure.PermissionDenied when the host key did not match its
// known_hosts_file or the server refused the identity, else
// failure.Unavailable. A remote command may itself exit 255; only the
// caller knows whether its command could have started, so Classify says
// nothing about whether anything ran.
func Classify(name string, stderr []byte) error {
	s := string(stderr)
	switch {
	case strings.Contains(s, "Host key verification failed"),
		strings.Contains(s, "REMOTE HOST IDENTIFICATION HAS CHANGED"),
		strings.Contains(s, "host key is known for"):
		return failure.New(failure.PermissionDenied, "ssh resource %q: the host's key is not the one in its known_hosts_file", name)
	case strings.Contains(s, "Permission denied"):
		return failure.New(failure.PermissionDenied, "ssh resource %q: the host refused the identity_file", name)
	}
	return failure.New(failure.Unavailable, "ssh resource %q: the connection failed", name)
}
