package runnerwire

import (
	"errors"
	"strconv"
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
		"oversized":      `{"v":` + strconv.Itoa(Major) + `,"kind":"hb","body":{"x":"` + strings.Repeat("a", MaxFrameBytes) + `"}}`,
		"other major":    `{"v":` + strconv.Itoa(Major+1) + `,"kind":"hb"}`,
		"unknown kind":   `{"v":` + strconv.Itoa(Major) + `,"kind":"shell"}`,
		"unknown member": `{"v":` + strconv.Itoa(Major) + `,"kind":"hb","extra":1}`,
		"trailing data":  `{"v":` + strconv.Itoa(Major) + `,"kind":"hb"} {}`,
		"not an object":  `[1]`,
		"over-long id":   `{"v":` + strconv.Itoa(Major) + `,"kind":"res","id":"` + strings.Repeat("i", MaxNameBytes+1) + `"}`,
	} {
		if _, err := Decode([]byte(b)); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v, want ErrFrame", name, err)
		}
	}
}

func TestEncodeRefusesAFrameOverTheBound(t *testing.T) {
	if _, err := Encode(KindResponse, 1, "x", Response{Result: []byte(`"` + strings.Repeat("a", MaxFrameBytes) + `"`)}); !errors.Is(err, ErrFrame) {
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
		"inventory state":  func(h *Hello) { h.Processes = []Inventory{{ID: "wc_job_1", State: "paused"}} },
		"inventory id": func(h *Hello) {
			h.Processes = []Inventory{{ID: strings.Repeat("i", MaxBinaryIDBytes+1), State: ProcRunning}}
		},
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
		"chunk": {Stream: Stdout, Data: make([]byte, MaxBinaryDataBytes+1)}, "offset": {Stream: Stdout, Offset: -1, Data: []byte("x")},
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
	if err := (&ProcStart{Argv: []string{"true"}, RunID: "wc_job_1", Stdin: make([]byte, MaxStdinBytes+1)}).Validate(); !errors.Is(err, ErrFrame) {
		t.Errorf("stdin over the bound: %v", err)
	}
	if err := (&ProcStart{Argv: []string{"true"}}).Validate(); !errors.Is(err, ErrFrame) {
		t.Errorf("a start without a run id: %v", err)
	}
	for name, body := range map[string]interface{ Validate() error }{
		"attach without run id":  &ProcAttach{},
		"attach negative offset": &ProcAttach{RunID: "wc_job_1", StderrOffset: -1},
		"release without run id": &ProcRelease{},
		"attached state":         &ProcAttached{State: "paused"},
	} {
		if err := body.Validate(); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := Compatible(Major+1, 0); err == nil || !strings.Contains(err.Error(), strconv.Itoa(Major+1)+".0") || !strings.Contains(err.Error(), strconv.Itoa(Major)+".0") {
		t.Errorf("an incompatible version: %v", err)
	}
}

func TestBinaryMessages(t *testing.T) {
	data := make([]byte, MaxBinaryDataBytes)
	data[0], data[len(data)-1] = 'a', 'z'
	b, err := EncodeBinary(Binary{Type: BinOutput, Gen: 7, ID: "rq_" + strings.Repeat("f", MaxBinaryIDBytes-3), Stream: Stderr, Offset: 1 << 40, Data: data})
	if err != nil || len(b) > MaxFrameBytes {
		t.Fatalf("the largest output message: %v, %d bytes", err, len(b))
	}
	m, err := DecodeBinary(b)
	if err != nil || m.Type != BinOutput || m.Gen != 7 || len(m.ID) != MaxBinaryIDBytes || m.Stream != Stderr || m.Offset != 1<<40 || len(m.Data) != len(data) || m.Data[len(data)-1] != 'z' {
		t.Fatalf("round trip: %v %+v", err, m.Stream)
	}
	if r, err := DecodeBinary(must(EncodeBinary(Binary{Type: BinResult, Gen: 1, ID: "rq_1", Data: []byte(`{}`)}))); err != nil || string(r.Data) != `{}` {
		t.Fatalf("a result: %v %q", err, r.Data)
	}
	if s, err := DecodeBinary(must(EncodeBinary(Binary{Type: BinSkip, Gen: 1, ID: "wc_job_1", Stream: Stdout, Offset: 9}))); err != nil || s.Type != BinSkip || s.Offset != 9 || len(s.Data) != 0 {
		t.Fatalf("a skip: %v %+v", err, s)
	}
	for name, m := range map[string]Binary{
		"skip with data":   {Type: BinSkip, Gen: 1, ID: "wc_job_1", Stream: Stdout, Offset: 9, Data: []byte("x")},
		"skip to 0":        {Type: BinSkip, Gen: 1, ID: "wc_job_1", Stream: Stdout},
		"skip no stream":   {Type: BinSkip, Gen: 1, ID: "wc_job_1", Offset: 9},
		"empty id":         {Type: BinOutput, Gen: 1, Stream: Stdout, Data: []byte("x")},
		"unknown type":     {Type: 'X', Gen: 1, ID: "rq_1", Data: []byte("x")},
		"empty part":       {Type: BinPart, Gen: 1, ID: "rq_1"},
		"result w/ stream": {Type: BinResult, Gen: 1, ID: "rq_1", Stream: Stdout, Data: []byte("x")},
		"output no data":   {Type: BinOutput, Gen: 1, ID: "rq_1", Stream: Stdout},
		"too much data":    {Type: BinPart, Gen: 1, ID: "rq_1", Data: make([]byte, MaxBinaryDataBytes+1)},
	} {
		if _, err := EncodeBinary(m); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v", name, err)
		}
	}
	good := must(EncodeBinary(Binary{Type: BinOutput, Gen: 1, ID: "rq_1", Stream: Stdout, Data: []byte("x")}))
	for name, mut := range map[string]func([]byte) []byte{
		"other major": func(b []byte) []byte { b[1] = Major + 1; return b },
		"stream":      func(b []byte) []byte { b[2] = 9; return b },
		"id length":   func(b []byte) []byte { b[19] = 200; return b },
		"no data":     func(b []byte) []byte { return b[:len(b)-1] },
		"short":       func(b []byte) []byte { return b[:10] },
		"oversized":   func(b []byte) []byte { return append(b, make([]byte, MaxFrameBytes)...) },
	} {
		if _, err := DecodeBinary(mut(append([]byte(nil), good...))); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
