package runnerwire

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeRefusesBadFrames(t *testing.T) {
	good, err := Encode(KindHeartbeat, 3, "", Heartbeat{Processes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if f, err := Decode(good); err != nil || f.Kind != KindHeartbeat || f.Gen != 3 {
		t.Fatalf("a good frame: %+v %v", f, err)
	}
	for name, b := range map[string]string{
		"oversized":      `{"v":1,"kind":"hb","body":{"x":"` + strings.Repeat("a", MaxFrameBytes) + `"}}`,
		"other major":    `{"v":2,"kind":"hb"}`,
		"unknown kind":   `{"v":1,"kind":"shell"}`,
		"unknown member": `{"v":1,"kind":"hb","extra":1}`,
		"trailing data":  `{"v":1,"kind":"hb"} {}`,
		"not an object":  `[1]`,
		"over-long id":   `{"v":1,"kind":"res","id":"` + strings.Repeat("i", MaxNameBytes+1) + `"}`,
	} {
		if _, err := Decode([]byte(b)); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v, want ErrFrame", name, err)
		}
	}
}

func TestEncodeRefusesAFrameOverTheBound(t *testing.T) {
	if _, err := Encode(KindOutput, 1, "x", Output{Stream: Stdout, Data: make([]byte, MaxFrameBytes)}); !errors.Is(err, ErrFrame) {
		t.Fatalf("an oversized frame was encoded: %v", err)
	}
}

func TestBodiesValidateTheirBounds(t *testing.T) {
	hello := func() Hello {
		return Hello{ClientID: "box", InstanceID: "ri_1", MaxConcurrentJobs: 4, Projects: []Project{{Name: "demo", Root: "/src/demo"}}}
	}
	if h := hello(); h.Validate() != nil {
		t.Fatalf("a good hello: %v", h.Validate())
	}
	for name, mut := range map[string]func(*Hello){
		"client id":        func(h *Hello) { h.ClientID = "../x" },
		"no instance":      func(h *Hello) { h.InstanceID = "" },
		"jobs 0":           func(h *Hello) { h.MaxConcurrentJobs = 0 },
		"jobs 65":          func(h *Hello) { h.MaxConcurrentJobs = 65 },
		"relative root":    func(h *Hello) { h.Projects[0].Root = "src" },
		"project twice":    func(h *Hello) { h.Projects = append(h.Projects, h.Projects[0]) },
		"too many":         func(h *Hello) { h.Projects = make([]Project, MaxProjects+1) },
		"bad resource":     func(h *Hello) { h.Resources = []string{"a b"} },
		"inventory bound":  func(h *Hello) { h.Processes = make([]Inventory, MaxInventory+1) },
		"capability bound": func(h *Hello) { h.Capabilities = make([]string, MaxCapabilities+1) },
	} {
		h := hello()
		mut(&h)
		if err := h.Validate(); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v, want ErrFrame", name, err)
		}
	}
	if h := hello(); true {
		h.Projects[0].Root = `C:\src\demo`
		if err := h.Validate(); err != nil {
			t.Errorf("a Windows root: %v", err)
		}
	}
	for name, o := range map[string]Output{
		"stream": {Stream: "tty", Data: []byte("x")}, "empty": {Stream: Stdout},
		"chunk": {Stream: Stdout, Data: make([]byte, MaxChunkBytes+1)}, "offset": {Stream: Stdout, Offset: -1, Data: []byte("x")},
	} {
		if err := o.Validate(); !errors.Is(err, ErrFrame) {
			t.Errorf("output %s: %v", name, err)
		}
	}
	if err := (&Response{}).Validate(); !errors.Is(err, ErrFrame) {
		t.Errorf("an empty response: %v", err)
	}
	if err := (&Response{Result: []byte("{}"), Error: &Error{Kind: "x"}}).Validate(); !errors.Is(err, ErrFrame) {
		t.Errorf("a response with both: %v", err)
	}
	if err := (&ProcStart{Argv: []string{"true"}, Stdin: make([]byte, MaxStdinBytes+1)}).Validate(); !errors.Is(err, ErrFrame) {
		t.Errorf("stdin over the bound: %v", err)
	}
	if err := Compatible(2, 0); err == nil || !strings.Contains(err.Error(), "2.0") || !strings.Contains(err.Error(), "1.0") {
		t.Errorf("an incompatible version: %v", err)
	}
}
