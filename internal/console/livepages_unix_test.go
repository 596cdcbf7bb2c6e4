//go:build unix

package console_test

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestJobTailEndsAtShutdown(t *testing.T) {
	s := start(t)
	alice := s.token(t, "alice")
	sess := s.startSession(t, alice, "a job that waits")
	root, err := s.a.Projects.Get(context.Background(), s.project)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root.Root, "gate"), 0o600); err != nil {
		t.Fatal(err)
	}
	job := s.runJob(t, alice, sess, `echo started; read x < gate; echo never`)
	b := s.browser(t)
	b.login(alice)
	req, _ := http.NewRequest("GET", s.base+"/console/sessions/"+sess+"/jobs/"+job+"/tail", nil)
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "data: started") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("tail ended before the job's output: %v\n%s", err, seen.String())
		}
		seen.WriteString(line)
	}
	// The server shuts down while the job runs and the page follows it:
	// the stream ends, and Serve returns cleanly (a stream that held on
	// would keep Shutdown waiting and Serve would fail).
	s.cancel()
	err = <-s.done
	s.done <- err // for the harness's cleanup
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	rest, _ := bufio.NewReader(br).ReadString(0)
	if strings.Contains(rest, "never") {
		t.Fatalf("the stream went on: %q", rest)
	}
	_ = os.Remove(filepath.Join(root.Root, "gate"))
}
