package auditmw

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHoldWriterKeepsTheTail: whatever the handler writes and flushes, the
// client-side bytes lack the last significant byte (and what follows it)
// until release, so no JSON value, SSE event or Content-Length body is
// complete before the audit commit; everything before it streams.
func TestHoldWriterKeepsTheTail(t *testing.T) {
	rr := httptest.NewRecorder()
	h := &holdWriter{ResponseWriter: rr}
	h.Flush()
	if rr.Flushed {
		t.Fatal("a flush before any body byte pushed the bare header")
	}
	ev1 := "event: message\ndata: {\"progress\":1}\n\n"
	ev2 := "event: message\ndata: {\"result\":{\"ok\":true}}\n\n"
	for _, c := range []struct {
		write, want string
	}{
		{ev1, strings.TrimSuffix(ev1, "}\n\n")},
		{"\n", strings.TrimSuffix(ev1, "}\n\n")}, // white space only: held
		{ev2, ev1 + "\n" + strings.TrimSuffix(ev2, "}\n\n")},
	} {
		if n, err := h.Write([]byte(c.write)); n != len(c.write) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		h.Flush()
		if got := rr.Body.String(); got != c.want {
			t.Fatalf("after writing %q the client holds %q, want %q", c.write, got, c.want)
		}
	}
	if !rr.Flushed {
		t.Fatal("flushes after body bytes were not passed on")
	}
	h.release()
	if got, want := rr.Body.String(), ev1+"\n"+ev2; got != want {
		t.Fatalf("after release: %q, want %q", got, want)
	}

	// A JSON body in one write, as httpserver.WriteJSON sends it.
	rr = httptest.NewRecorder()
	h = &holdWriter{ResponseWriter: rr}
	body := `{"success":true,"output":{"text":"` + strings.Repeat("x", 70_000) + `"}}` + "\n"
	h.Write([]byte(body))
	h.Flush()
	if got := rr.Body.String(); got != body[:len(body)-2] {
		t.Fatalf("JSON body before release: %d bytes ending %q, want all but the closing brace and newline", len(got), got[len(got)-5:])
	}
	h.release()
	if rr.Body.String() != body {
		t.Fatal("JSON body incomplete after release")
	}
}
