//go:build unix

package sshtest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/sshresource"
)

const (
	// SSHD is the server binary; sshd must be started by absolute path.
	SSHD = "/usr/sbin/sshd"
	// RequireEnv names the variable that turns a missing sshd into a
	// failure instead of a skip.
	RequireEnv = "WEBCODEX_REQUIRE_SSHD"
	// privsepDir is the directory Debian's sshd chroots its unprivileged
	// child into when it runs as root.
	privsepDir = "/run/sshd"
	// StartTimeout bounds the wait for sshd to listen.
	StartTimeout = 10 * time.Second
	// MaxLogBytes bounds the server log a Server keeps.
	MaxLogBytes = 1 << 20
)

// Server is one running sshd. Its fields are for the test: the resource's
// host, port and login user, and the files of an authorized key and of a
// known_hosts holding the server's host key.
type Server struct {
	Host           string
	Port           int
	User           string
	Home           string // the login directory (the user's, from passwd)
	ShellHome      string // $HOME of remote commands: an empty directory
	Dir            string // the temporary directory holding every file
	IdentityFile   string
	KnownHostsFile string
	HostPublicKey  string // "ssh-ed25519 AAAA..."

	mu  sync.Mutex
	log []byte
}

// Options changes the server's configuration.
type Options struct {
	// PasswordAuthentication turns password authentication on, so that a
	// client that could prompt would be asked for a password.
	PasswordAuthentication bool
}

// Require skips t when sshd, ssh, ssh-keygen or ssh-agent is missing, or fails it
// when RequireEnv is "1".
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	if _, err := os.Stat(SSHD); err != nil {
		missing = append(missing, SSHD)
	}
	for _, p := range []string{sshresource.Program, "ssh-keygen", "ssh-agent"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("OpenSSH is not installed (missing %s); install openssh-server and openssh-client", strings.Join(missing, ", "))
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s (%s=1)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// Start starts sshd for t and stops it when t ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	Require(t)
	u, err := user.Current()
	if err != nil {
		t.Fatalf("current user: %v", err)
	}
	if os.Geteuid() == 0 {
		if err := os.MkdirAll(privsepDir, 0o755); err != nil {
			t.Fatalf("sshd privilege separation directory: %v", err)
		}
	}
	dir := t.TempDir()
	hostKey, hostPub := Keygen(t, dir, "host_ed25519")
	userKey, userPub := Keygen(t, dir, "user_ed25519")
	authorized := filepath.Join(dir, "authorized_keys")
	writeFile(t, authorized, userPub+"\n")

	// The login shell's HOME is an empty directory: a test never runs the
	// startup files (~/.bashrc, which bash reads when sshd runs it) of
	// whoever runs the tests, nor pays for them.
	shellHome := filepath.Join(dir, "home")
	if err := os.Mkdir(shellHome, 0o700); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	password := "no"
	if o.PasswordAuthentication {
		password = "yes"
	}
	config := filepath.Join(dir, "sshd_config")
	writeFile(t, config, strings.Join([]string{
		fmt.Sprintf("Port %d", port),
		"ListenAddress 127.0.0.1",
		"HostKey " + hostKey,
		"AuthorizedKeysFile " + authorized,
		"StrictModes no",
		"UsePAM no",
		"PasswordAuthentication " + password,
		"KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password",
		"PidFile none",
		"AllowAgentForwarding yes",
		"LogLevel INFO",
		"SetEnv HOME=" + shellHome,
		"",
	}, "\n"))
	knownHosts := filepath.Join(dir, "known_hosts")
	writeFile(t, knownHosts, fmt.Sprintf("[127.0.0.1]:%d %s\n", port, hostPub))

	s := &Server{
		Host: "127.0.0.1", Port: port, User: u.Username, Home: u.HomeDir, ShellHome: shellHome, Dir: dir,
		IdentityFile: userKey, KnownHostsFile: knownHosts, HostPublicKey: hostPub,
	}
	cmd := exec.Command(SSHD, "-D", "-e", "-f", config)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	exited := make(chan struct{})
	listening := make(chan struct{})
	go func() {
		// Reads until sshd and every session child holding stderr end.
		sc := bufio.NewScanner(stderr)
		announced := false
		for sc.Scan() {
			s.appendLog(sc.Text())
			if !announced && strings.HasPrefix(sc.Text(), "Server listening on 127.0.0.1 port ") {
				announced = true
				close(listening)
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(StartTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	timeout := time.NewTimer(StartTimeout)
	defer timeout.Stop()
	select {
	case <-listening:
	case <-exited:
		t.Fatalf("sshd exited before listening on port %d:\n%s", port, s.Log())
	case <-timeout.C:
		t.Fatalf("sshd did not listen within %s:\n%s", StartTimeout, s.Log())
	}
	probe(t, s)
	return s
}

// probe checks that the listener on the port is this sshd: it reads the
// SSH banner.
func probe(t testing.TB, s *Server) {
	t.Helper()
	c, err := net.DialTimeout("tcp", net.JoinHostPort(s.Host, fmt.Sprint(s.Port)), StartTimeout)
	if err != nil {
		t.Fatalf("probe sshd: %v\n%s", err, s.Log())
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(StartTimeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "SSH-2.0-OpenSSH") {
		t.Fatalf("probe sshd: banner %q, %v", line, err)
	}
}

// Resource returns a valid resource named name for s.
func (s *Server) Resource(name string) sshresource.Resource {
	return sshresource.Resource{
		Name: name, Host: s.Host, Port: s.Port, User: s.User,
		IdentityFile: s.IdentityFile, KnownHostsFile: s.KnownHostsFile,
	}
}

// Pool returns a pool of masters in a fresh control directory, every
// master closed when the test ends (before a server Start made earlier
// stops).
func Pool(tb testing.TB) *sshresource.Pool {
	tb.Helper()
	p, err := sshresource.NewPool("")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.CloseAll() })
	return p
}

// Log returns what sshd has logged so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.log)
}

func (s *Server) appendLog(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.log)+len(line)+1 <= MaxLogBytes {
		s.log = append(append(s.log, line...), '\n')
	}
}

// Keygen makes an unencrypted ed25519 key pair dir/name and dir/name.pub
// and returns the private key's path and the public key line (without
// comment).
func Keygen(t testing.TB, dir, name string) (private, public string) {
	t.Helper()
	private = filepath.Join(dir, name)
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", private).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(private + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return private, strings.TrimSpace(string(pub))
}

func writeFile(t testing.TB, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// freePort returns a port that was free a moment ago. Another process
// could take it before sshd binds it; sshd then exits and Start fails
// with its log, never silently.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
