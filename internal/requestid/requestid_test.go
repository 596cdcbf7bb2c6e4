package requestid

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestAccept(t *testing.T) {
	for _, in := range []string{"abc", "0f8fad5b-d9cb-469f-a165-70867728950e", strings.Repeat("x", MaxBytes)} {
		if got := Accept(in); got != in {
			t.Errorf("Accept(%q) = %q, want it kept", in, got)
		}
	}
	for _, in := range []string{"", strings.Repeat("x", MaxBytes+1), "a b", "a\nb", "<script>", "-x", "é"} {
		got := Accept(in)
		if got == in || !strings.HasPrefix(got, "req_") || len(got) != 4+2*generatedBytes {
			t.Errorf("Accept(%q) = %q, want a new id", in, got)
		}
	}
	if New() == New() {
		t.Fatal("two new ids are equal")
	}
}

func TestHandlerAddsTheContextID(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewJSONHandler(&buf, nil))).With("component", "x")
	log.InfoContext(With(context.Background(), "rid-1"), "hello")
	log.Info("no context")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines: %q", lines)
	}
	var first, second map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first[LogKey] != "rid-1" || first["component"] != "x" {
		t.Fatalf("first line: %v", first)
	}
	if _, ok := second[LogKey]; ok {
		t.Fatalf("second line has a request id: %v", second)
	}
}
