//go:build linux

// The shell tests run real shells and count their processes through /proc
// (runner.CountGroup, runner.Survivors): they are Linux tests.

package shell

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/runner"
)

// escapers start a sleep that leaves the shell's process group or parent
// and append its pid to the file %s.
var escapers = map[string]string{
	"setsid":     `setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >> %s`,
	"doublefork": `(sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >> %s) & wait $!`,
	"nohup":      `nohup sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >> %s`,
}

// TestCloseKillsEscapedDescendants leaves a setsid, a double-forked and a
// nohup sleep behind a shell command and ends the shell by close_shell,
// session close and Manager.Close (shutdown), under each containment
// mechanism: no process the shell started survives, by the pids it
// printed or by its marker (the shell id).
func TestCloseKillsEscapedDescendants(t *testing.T) {
	mechs := map[string]*runner.Containment{"tracking": runner.Tracking()}
	if c := runner.Setup(); c.Mechanism() == runner.MechCgroup {
		mechs["cgroup"] = c
	}
	endings := map[string]func(m *Manager, id string){
		"close_shell":   func(m *Manager, id string) { m.CloseShell(id, testSession) },
		"close_session": func(m *Manager, id string) { m.CloseSession(testSession) },
		"shutdown":      func(m *Manager, id string) { m.Close() },
	}
	for mname, c := range mechs {
		for ename, script := range escapers {
			for endName, end := range endings {
				t.Run(mname+"/"+ename+"/"+endName, func(t *testing.T) {
					t.Parallel()
					m := newManager(t, Options{Contain: c})
					info, root := openShell(t, m, testSession, Sh)
					pidFile := filepath.Join(root, "pids")
					res := run(t, m, info.ShellID, strings.ReplaceAll(script, "%s", quote(pidFile))+"; echo started")
					if res.ExitCode != 0 || res.Stdout.Text != "started\n" {
						t.Fatalf("command: %+v", res)
					}
					m.mu.Lock()
					s := m.shells[info.ShellID]
					m.mu.Unlock()
					end(m, info.ShellID)
					<-s.released
					b, err := os.ReadFile(pidFile)
					if err != nil {
						t.Fatal(err)
					}
					var pids []int
					for _, f := range strings.Fields(string(b)) {
						pid, err := strconv.Atoi(f)
						if err != nil {
							t.Fatalf("pid file holds %q", f)
						}
						pids = append(pids, pid)
					}
					if len(pids) == 0 {
						t.Fatal("no pid written")
					}
					if live := runner.Live(pids); len(live) > 0 {
						t.Fatalf("processes %v started by the shell survived", live)
					}
					if sv := runner.Survivors(info.ShellID); len(sv) > 0 {
						t.Fatalf("processes %v carrying the shell's marker survived", sv)
					}
					if cg := s.unit.Identity().Cgroup; cg != "" {
						if _, err := os.Stat(cg); !os.IsNotExist(err) {
							t.Fatalf("the shell's cgroup %s was not removed: %v", cg, err)
						}
					}
				})
			}
		}
	}
}
