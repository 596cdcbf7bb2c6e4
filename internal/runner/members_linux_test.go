package runner

import (
	"os"
	"slices"
	"testing"
)

// TestMembersStayInTheServersTree: a unit this server started finds the
// processes of its group only among the server's descendants (where its
// orphans reparent), so a process elsewhere whose group id reuses the
// leader's pid is not taken for one of them; a unit rebuilt after a crash
// (no Containment) still counts the group wherever it is.
func TestMembersStayInTheServersTree(t *testing.T) {
	Setup()
	if !subreaping {
		t.Skip("the server is not a child subreaper here")
	}
	self := os.Getpid()
	// Pids above any pid_max, so the test reads nothing of real processes.
	const leader, orphan, foreign, foreignChild = 1 << 30, 1<<30 + 1, 1<<30 + 2, 1<<30 + 3
	ps := []proc{
		{pid: self, ppid: 1, pgid: self, start: 1},
		{pid: orphan, ppid: self, pgid: leader, start: 150},
		{pid: foreign, ppid: 1, pgid: leader, start: 200},
		{pid: foreignChild, ppid: foreign, pgid: leader, start: 210},
	}
	pids := func(m []proc) []int {
		var out []int
		for _, p := range m {
			out = append(out, p.pid)
		}
		slices.Sort(out)
		return out
	}
	u := &Unit{c: &Containment{mech: MechSubreaper}, id: "wc_test_members", pid: leader, start: 100, reaped: true, known: map[int]uint64{}}
	if got := pids(u.members(ps, false, 0)); !slices.Equal(got, []int{orphan}) {
		t.Fatalf("members of a running unit: %v, want only the orphan %d", got, orphan)
	}
	u.c = nil
	if got := pids(u.members(ps, false, 0)); !slices.Equal(got, []int{orphan, foreign, foreignChild}) {
		t.Fatalf("members after a crash: %v, want the whole group", got)
	}
}
