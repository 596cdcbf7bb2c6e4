//go:build linux

package shell

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sshresource"
	"github.com/webcodex/webcodex/internal/sshresource/sshtest"
)

// A shell on a real sshd keeps the master it was opened on: when a newer
// generation retires that master, the shell is lost (connection_lost), the
// command running then fails outcome_unknown, and its remote process group
// is killed over a connection of its own; nothing moves to the new master.
func TestRemoteShellKeepsItsMasterOrFails(t *testing.T) {
	s := sshtest.Start(t, sshtest.Options{})
	r := s.Resource("db")
	p := sshtest.Pool(t)
	ctx := context.Background()
	key := sshresource.Key{Session: testSession, Resource: r.Name, Generation: 1}
	master, err := p.Master(ctx, key, r)
	if err != nil {
		t.Fatal(err)
	}
	in := func(dir string) func(string) ([]string, error) {
		return func(text string) ([]string, error) {
			remote, err := sshresource.RemoteCommand(dir, text)
			if err != nil {
				return nil, err
			}
			return master.Argv(remote)
		}
	}
	dir := tempRoot(t)
	m := newManager(t, Options{})
	info, err := openRemote(t, m, Bash, &Remote{Resource: r.Name, Cwd: dir, Argv: in(dir), Command: in("")})
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, m, info.ShellID, "pwd"); res.Stdout.Text != dir+"\n" {
		t.Fatalf("pwd: %+v", res)
	}
	fifo := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	type done struct {
		res Result
		err error
	}
	ch := make(chan done, 1)
	go func() {
		res, err := m.Exec(ctx, info.ShellID, testSession, "echo started > started; sleep 60", time.Minute)
		ch <- done{res, err}
	}()
	// Opening the fifo returns once the remote command opened it.
	f, err := os.Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	m.mu.Lock()
	remotePID := int(m.shells[info.ShellID].remotePID.Load())
	m.mu.Unlock()

	key.Generation = 2
	if _, err := p.Master(ctx, key, r); err != nil {
		t.Fatal(err)
	}
	d := <-ch
	wantKind(t, d.err, failure.OutcomeUnknown)
	if !d.res.ShellExited || d.res.State != Lost {
		t.Fatalf("after the master was retired: %+v", d.res)
	}
	if st, _ := m.Status(info.ShellID, testSession); st.EndReason != EndConnectionLost {
		t.Fatalf("status: %+v", st)
	}
	waitGone(t, remotePID) // the remote shell's group, sleep included
	_, err = m.Exec(ctx, info.ShellID, testSession, "echo again", time.Second)
	wantKind(t, err, failure.ShellResetRequired)
}
