package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/runner"
)

// credentialsFDVar names the inherited pipe from which a re-executed server
// reads the credentials its first execution took out of its environment.
// The variable holds a descriptor number, never a credential.
const credentialsFDVar = "WEBCODEX_BOOTSTRAP_FD"

// maxCredentialBytes bounds what goes through that pipe: one page, the
// least a pipe buffers, so writing it before exec never blocks.
const maxCredentialBytes = 4096

// runtimeEnv lists the Go runtime settings the server process itself reads
// at start; they are not passed to children.
var runtimeEnv = []string{"GODEBUG", "GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GOTRACEBACK", "GORACE", "GOCOVERDIR"}

// secureServerProcess prepares a serve or mcp process that runs tools for
// agents. It makes the process non-dumpable (PR_SET_DUMPABLE 0), so a
// process of the same non-root user — any child a tool starts — can neither
// read its memory nor its /proc files. Because /proc/<pid>/environ shows
// the environment the process was executed with, and root may still read
// it, it then makes sure that environment holds no credential: when the
// environment holds anything serverEnv does not keep, it re-executes
// /proc/self/exe with the same arguments and only the kept environment,
// handing the credentials the server accepts (app.CredentialEnv) over an
// inherited pipe; it does not return then. The re-executed process reads
// that pipe and closes it before anything else runs.
//
// It returns the getenv the configuration is loaded with: the carried
// credentials, else the (clean) environment. Errors: prctl, the pipe, or
// exec failing, and a credential over maxCredentialBytes; none holds a
// credential's value.
func secureServerProcess() (func(string) string, error) {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("make the server process non-dumpable: %w", err)
	}
	carried := map[string]string{}
	if v, ok := os.LookupEnv(credentialsFDVar); ok {
		os.Unsetenv(credentialsFDVar)
		var err error
		if carried, err = readCredentials(v); err != nil {
			return nil, err
		}
	}
	environ := os.Environ()
	keep, creds := serverEnv(environ)
	if len(keep) < len(environ) {
		for k, v := range carried {
			if !slices.ContainsFunc(creds, func(kv string) bool { return strings.HasPrefix(kv, k+"=") }) {
				creds = append(creds, k+"="+v)
			}
		}
		return nil, reexec(keep, creds)
	}
	return func(k string) string {
		if v, ok := carried[k]; ok {
			return v
		}
		return os.Getenv(k)
	}, nil
}

// serverEnv splits environ into the variables the server keeps and the
// credentials it accepts (NAME=VALUE, for app.CredentialEnv). It keeps
// what a child may inherit (runner.InheritedNames), XDG_DATA_HOME, the Go
// runtime settings, and WEBCODEX_* configuration whose name does not say
// credential (runner.CredentialName); everything else — other credentials
// (WEBCODEX_MCP_TOKEN, cloud keys) and whatever the shell exported — is
// left out, since nothing in the server reads it.
func serverEnv(environ []string) (keep, creds []string) {
	inherited := runner.InheritedNames()
	accepted := app.CredentialEnv()
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
		case slices.Contains(accepted, k):
			creds = append(creds, kv)
		case runner.CredentialName(k):
		case slices.Contains(inherited, k), slices.Contains(runtimeEnv, k), k == "XDG_DATA_HOME",
			strings.HasPrefix(k, "WEBCODEX_"):
			keep = append(keep, kv)
		}
	}
	return keep, creds
}

// reexec replaces the process with /proc/self/exe, the same arguments and
// env, passing creds through a pipe whose read end alone survives exec. It
// returns only on failure.
func reexec(env, creds []string) error {
	env = slices.Clone(env)
	if len(creds) > 0 {
		fd, err := credentialPipe(creds)
		if err != nil {
			return err
		}
		defer unix.Close(fd) // reached only when exec fails
		env = append(env, credentialsFDVar+"="+strconv.Itoa(fd))
	}
	err := unix.Exec("/proc/self/exe", os.Args, env)
	return fmt.Errorf("re-execute the server without credentials in its environment: %w", err)
}

// credentialPipe writes creds, NUL-separated, into a new pipe, closes its
// write end and returns the read end, which is not close-on-exec.
func credentialPipe(creds []string) (int, error) {
	data := []byte(strings.Join(creds, "\x00"))
	if len(data) > maxCredentialBytes {
		return -1, fmt.Errorf("credentials in the environment (%s) are longer than %d bytes", strings.Join(app.CredentialEnv(), ", "), maxCredentialBytes)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return -1, fmt.Errorf("credential pipe: %w", err)
	}
	fail := func(err error) (int, error) {
		unix.Close(p[0])
		unix.Close(p[1])
		return -1, fmt.Errorf("credential pipe: %w", err)
	}
	for len(data) > 0 {
		n, err := unix.Write(p[1], data)
		if err != nil {
			return fail(err)
		}
		data = data[n:]
	}
	if err := unix.Close(p[1]); err != nil {
		unix.Close(p[0])
		return -1, fmt.Errorf("credential pipe: %w", err)
	}
	if err := unix.SetNonblock(p[0], false); err != nil {
		p[1] = -1
		return fail(err)
	}
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFD, 0); err != nil {
		p[1] = -1
		return fail(err)
	}
	return p[0], nil
}

// readCredentials reads and closes the pipe named by fdText (a descriptor
// number above 2 that is a FIFO) and returns the credentials it holds.
// Only names in app.CredentialEnv are accepted.
func readCredentials(fdText string) (map[string]string, error) {
	fd, err := strconv.Atoi(fdText)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q is not an inherited descriptor", credentialsFDVar, fdText)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil, fmt.Errorf("%s=%d is not an inherited pipe", credentialsFDVar, fd)
	}
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "credentials")
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCredentialBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read credentials from %s: %w", credentialsFDVar, err)
	}
	if len(data) > maxCredentialBytes {
		return nil, fmt.Errorf("credentials from %s are longer than %d bytes", credentialsFDVar, maxCredentialBytes)
	}
	out := map[string]string{}
	for _, kv := range strings.Split(string(data), "\x00") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !slices.Contains(app.CredentialEnv(), k) {
			return nil, errors.New("credentials from " + credentialsFDVar + " name a variable the server does not accept")
		}
		out[k] = v
	}
	return out, nil
}
