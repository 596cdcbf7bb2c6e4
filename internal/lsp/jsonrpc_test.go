package lsp

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestFramingRoundTrip(t *testing.T) {
	var b bytes.Buffer
	for _, body := range []string{`{"a":1}`, `{"é":"𝔸"}`, ``} {
		if err := writeMessage(&b, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(&b)
	for _, want := range []string{`{"a":1}`, `{"é":"𝔸"}`, ``} {
		got, err := readMessage(r)
		if err != nil || string(got) != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
}

func TestFramingHeaders(t *testing.T) {
	in := "content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"
	got, err := readMessage(bufio.NewReader(strings.NewReader(in)))
	if err != nil || string(got) != "{}" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestFramingRejects(t *testing.T) {
	for name, in := range map[string]string{
		"no length":      "Content-Type: x\r\n\r\n{}",
		"bad length":     "Content-Length: x\r\n\r\n{}",
		"negative":       "Content-Length: -1\r\n\r\n{}",
		"too large":      fmt.Sprintf("Content-Length: %d\r\n\r\n", MaxMessageBytes+1),
		"no colon":       "garbage\r\n\r\n",
		"long header":    strings.Repeat("x", MaxHeaderBytes+10) + "\r\n\r\n",
		"short body":     "Content-Length: 10\r\n\r\n{}",
		"no end of head": "Content-Length: 2\r\n",
	} {
		if _, err := readMessage(bufio.NewReaderSize(strings.NewReader(in), MaxHeaderBytes)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
