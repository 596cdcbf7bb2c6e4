package sshresource

import (
	"bytes"
	"testing"
)

func TestTailBufferKeepsTheLastBytes(t *testing.T) {
	tb := &tailBuffer{max: MaxStderrBytes}
	tb.Write(bytes.Repeat([]byte("a"), MaxStderrBytes))
	tb.Write([]byte("end"))
	got := tb.Bytes()
	if len(got) != MaxStderrBytes || !bytes.HasSuffix(got, []byte("aend")) {
		t.Errorf("tail is %d bytes ending %q", len(got), got[len(got)-4:])
	}
}
