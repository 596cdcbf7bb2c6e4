package shell

import (
	"strings"
	"testing"
)

// A status stream (a remote shell's stdout) cuts the output at the token,
// reads " <status>\n" after it across any split, and drops what follows.
func TestStreamReadsStatusAfterSentinelAcrossReads(t *testing.T) {
	sent := "ABCDEFGHIJKLMNOP"
	for _, chunks := range [][]string{
		{"out AB", "CDEFGHIJKLMNOP 4", "2\nlater"},
		{"out ABCDEFGHIJKLMNOP", " ", "42", "\n"},
		{"out ABCDEFGHIJKLMNOP 42\n", "later"},
	} {
		st := newStream(nil, 1024)
		tail, seen := st.arm(sent, true)
		for _, c := range chunks {
			st.feed([]byte(c))
		}
		select {
		case <-seen:
		default:
			t.Fatalf("%q: not seen", chunks)
		}
		code, ok := st.status()
		if !ok || code != 42 || tail.Snapshot().Text != "out " {
			t.Fatalf("%q: status %d %v, tail %q", chunks, code, ok, tail.Snapshot().Text)
		}
	}
}

// A damaged status line (no number, no space, or longer than
// maxStatusBytes without a newline) is seen but not ok: never a status.
func TestStreamRefusesADamagedStatus(t *testing.T) {
	for _, rest := range []string{" x\n", "0\n", " \n", " " + strings.Repeat("1", maxStatusBytes)} {
		st := newStream(nil, 1024)
		_, seen := st.arm("TOKEN", true)
		st.feed([]byte("TOKEN" + rest))
		select {
		case <-seen:
		default:
			t.Fatalf("%q: not seen", rest)
		}
		if _, ok := st.status(); ok {
			t.Fatalf("%q: a status was read", rest)
		}
	}
	if maxStatusBytes < len(" -2147483648") {
		t.Fatalf("maxStatusBytes %d cannot hold a status", maxStatusBytes)
	}
}

// The remote wrapper never holds the token or the stderr sentinel whole
// (set -x and set -v cannot echo them), closes the framing descriptors for
// the command and reads its status from fds 4 and 5.
func TestRemoteWrapper(t *testing.T) {
	tok, errs := strings.Repeat("a", 32), strings.Repeat("b", 32)
	w := remoteWrapper("echo 'hi'", tok, errs)
	if strings.Contains(w, tok) || strings.Contains(w, errs) || strings.Contains(w, ">&3") ||
		!strings.Contains(w, "4>&- 5>&- </dev/null") || !strings.HasSuffix(w, "\"$__wc_s\" >&4\n") || strings.Count(w, "\n") != 1 {
		t.Fatalf("wrapper %q", w)
	}
	if Bash.program() != "exec bash --noprofile --norc" || Sh.program() != "exec sh" {
		t.Fatal("remote programs")
	}
	if remoteSignalTimeout <= 0 {
		t.Fatal("remoteSignalTimeout")
	}
}
