package runner

import (
	"testing"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// TestRulesetLogsTheExecutedProgramsDenials checks the restrict_self
// flags: LOG_NEW_EXEC_ON from Landlock ABI 7 (decision 0088), none below.
func TestRulesetLogsTheExecutedProgramsDenials(t *testing.T) {
	if LandlockABI() < 1 {
		t.Skip("Landlock is unavailable on this kernel")
	}
	fd, flags, err := ruleset(rules{read: []string{"/usr"}, write: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	want := uint32(0)
	if LandlockABI() >= 7 {
		want = llsyscall.FlagRestrictSelfLogNewExecOn
	}
	if flags != want {
		t.Errorf("restrict_self flags %#x on ABI %d, want %#x", flags, LandlockABI(), want)
	}
}
