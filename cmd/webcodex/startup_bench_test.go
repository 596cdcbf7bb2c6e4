package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/benchpair"
)

// BenchmarkStartToToolsList times a server's start-up as a client sees
// it: from starting the process (webcodex on a fresh data directory) to
// the answer of its first tools/list, after initialize. The base is the
// official Node filesystem server when WEBCODEX_PEER_FS names its
// dist/index.js (node on PATH), or another webcodex binary named by
// WEBCODEX_BASE_BIN; the two alternate start by start. Each process is
// ended (stdin closed, waited for) outside the timed part. It reports
// both medians and their ratio (webcodex over the base).
func BenchmarkStartToToolsList(b *testing.B) {
	node, script, baseBin := peerBase(b)
	baseName, base := "node", func() *exec.Cmd { return exec.Command(node, script, b.TempDir()) }
	if baseBin != "" {
		baseName, base = "base", func() *exec.Cmd { return exec.Command(baseBin, "mcp", "--data-dir", b.TempDir()) }
	}
	subject := func() *exec.Cmd { return selfCommand("mcp", "--data-dir", b.TempDir()) }
	sides := [2]func() *exec.Cmd{base, subject}
	var times [2][]time.Duration
	for i := 0; b.Loop(); i++ {
		k := i % 2
		times[k] = append(times[k], startToToolsList(b, sides[k]()))
	}
	for k := range sides {
		if len(times[k]) == 0 {
			times[k] = append(times[k], startToToolsList(b, sides[k]()))
		}
	}
	mb, ms := benchpair.Median(times[0]), benchpair.Median(times[1])
	b.ReportMetric(float64(mb.Nanoseconds()), baseName+"-median-ns")
	b.ReportMetric(float64(ms.Nanoseconds()), "webcodex-median-ns")
	b.ReportMetric(float64(ms)/float64(mb), "ratio")
}

// startToToolsList starts cmd, sends initialize, the initialized
// notification and tools/list, and returns the time from the start to the
// tools/list answer; then it ends the process.
func startToToolsList(b *testing.B, cmd *exec.Cmd) time.Duration {
	in, out, stderr := stdioPipes(b, cmd)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReaderSize(out, 256<<10)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"webcodex-bench","version":"1"}}}`)
	if ans, err := r.ReadBytes('\n'); err != nil || !bytes.Contains(ans, []byte(`"result":`)) {
		b.Fatalf("initialize: %v %.300s\n%s", err, ans, stderr.String())
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	ans, err := r.ReadBytes('\n')
	took := time.Since(start)
	if err != nil || !bytes.Contains(ans, []byte(`"tools":`)) {
		b.Fatalf("tools/list: %v %.300s\n%s", err, ans, stderr.String())
	}
	in.Close()
	io.Copy(io.Discard, r)
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%s: %v\n%s", cmd.Path, err, stderr.String())
	}
	return took
}
