// Package runnerwire is the protocol between the server and a `webcodex
// runner`: the one package both sides import.
//
// A runner dials out to the server's runner endpoint (a WebSocket with the
// subprotocol Subprotocol, or runnerlink's long-poll link) and the two
// exchange Frames, one JSON object per text message, each at most
// MaxFrameBytes. The runner speaks first with a
// Hello; the server answers Welcome (with the connection's generation) or
// Reject (with a code and a message) and closes. After the welcome:
//
//   - the server sends Request frames (an operation on one of the runner's
//     projects, or a process start) and Cancel frames;
//   - the runner answers each request exactly once: a result (binary
//     messages, EncodeBinary: BinPart pieces and a last BinResult) or a
//     Response (an error, or a small result); it sends output chunks
//     (BinOutput) and an Exit for a started process, and a Heartbeat every
//     HeartbeatInterval.
//
// Every frame after the hello carries the connection's generation. A frame
// of another generation is refused by the receiver: a result can never land
// on a connection it was not asked on. A request is sent at most once; one
// that was sent and not answered when its connection ends is
// outcome_unknown, never re-sent.
//
// Decode is the only way bytes become a Frame: it checks the size, decodes
// strictly (unknown members and trailing data are errors) and checks the
// version and the kind. Each body has a Validate method that the receiver
// calls before acting on it.
package runnerwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Protocol versions. Major changes are incompatible: a hello of another
// major version is rejected with both versions in the message. Minor
// versions only add optional members.
const (
	Major = 2
	Minor = 0
)

// Subprotocol is the WebSocket subprotocol of this major version.
const Subprotocol = "webcodex.runner.v2"

// Bounds of the protocol. Both sides enforce them: a receiver refuses a
// frame over MaxFrameBytes (the WebSocket is closed with 1009), and every
// list a body carries is bounded.
const (
	// MaxFrameBytes bounds one frame, the internal wire envelope the
	// specification caps at 64 KiB.
	MaxFrameBytes = 64 << 10
	// MaxStdinBytes bounds the stdin of a process started through a
	// runner: it travels inside the start request.
	MaxStdinBytes = 24 << 10
	// MaxScriptBytes bounds the script body (run_script's) a process
	// start carries. With stdin at its bound, both still fit one frame
	// (binary members travel in base64: 4/3 of their size).
	MaxScriptBytes = 16 << 10
	// MaxProjects bounds the projects one runner announces.
	MaxProjects = 64
	// MaxResources bounds the SSH resources one runner announces.
	MaxResources = 32
	// SpoolBytes is how much of each output stream of a process a runner
	// keeps (the latest bytes, on its disk) for the server: output not
	// sent when a connection ends is sent from there to the next one;
	// what the spool no longer holds is reported with a skip.
	SpoolBytes = 8 << 20
	// MaxInventory bounds the processes a hello reports: the runner's
	// authoritative inventory limit.
	MaxInventory = 64
	// MaxCapabilities bounds the capability names of a hello.
	MaxCapabilities = 32
	// MaxNameBytes bounds every identifier on the wire (client id,
	// instance id, op name, request id, project and resource names).
	MaxNameBytes = 128
	// MaxMessageBytes bounds the human text of a reject or an error.
	MaxMessageBytes = 1024
	// MaxInflight bounds the requests in flight on one connection: the
	// server sends no more, and a runner answers more too_many_requests.
	MaxInflight = 256
	// MaxResultBytes bounds one request's result sent in binary parts.
	MaxResultBytes = 8 << 20
)

// Timing of a connection. The server announces the heartbeat interval in
// its welcome; a runner that misses MissedHeartbeats of them is lost.
const (
	HeartbeatInterval = 15 * time.Second
	MissedHeartbeats  = 3
	// HelloTimeout bounds the time from the upgrade to the hello.
	HelloTimeout = 10 * time.Second
)

// Kind names a frame's body.
type Kind string

// Frame kinds.
const (
	KindHello     Kind = "hello"   // runner → server, first frame
	KindWelcome   Kind = "welcome" // server → runner
	KindReject    Kind = "reject"  // server → runner, then close
	KindRequest   Kind = "req"     // server → runner
	KindCancel    Kind = "cancel"  // server → runner
	KindResponse  Kind = "res"     // runner → server, one per request
	KindExit      Kind = "exit"    // runner → server, a started process ended
	KindHeartbeat Kind = "hb"      // runner → server
)

func (k Kind) known() bool {
	switch k {
	case KindHello, KindWelcome, KindReject, KindRequest, KindCancel, KindResponse, KindExit, KindHeartbeat:
		return true
	}
	return false
}

// A Frame is one message. ID names the request a Request, Cancel,
// Response, Output or Exit belongs to; Gen is the connection's generation
// (0 only in a hello and a reject).
type Frame struct {
	V    int             `json:"v"`
	Kind Kind            `json:"kind"`
	Gen  uint64          `json:"gen,omitempty"`
	ID   string          `json:"id,omitempty"`
	Body json.RawMessage `json:"body,omitempty"`
}

// ErrFrame marks a frame that breaks the protocol (size, syntax, version,
// kind, bounds). The receiver refuses it.
var ErrFrame = errors.New("runnerwire: bad frame")

// Encode builds a frame of kind k carrying body, of at most MaxFrameBytes.
// The body is encoded once and the envelope written around it (marshaling a
// Frame would scan the encoded body again).
func Encode(k Kind, gen uint64, id string, body any) ([]byte, error) {
	b := make([]byte, 0, 128)
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, Major, 10)
	b = append(b, `,"kind":"`...)
	b = append(b, k...)
	b = append(b, '"')
	if gen != 0 {
		b = append(b, `,"gen":`...)
		b = strconv.AppendUint(b, gen, 10)
	}
	if id != "" {
		q, err := json.Marshal(id)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"id":`...), q...)
	}
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"body":`...), raw...)
	}
	b = append(b, '}')
	if len(b) > MaxFrameBytes {
		return nil, fmt.Errorf("%w: a %s frame of %d bytes is over the %d-byte bound", ErrFrame, k, len(b), MaxFrameBytes)
	}
	return b, nil
}

// Decode parses one frame. It refuses a frame over MaxFrameBytes, one that
// is not exactly one JSON object with only Frame's members, one of another
// major version, an unknown kind and an over-long id.
func Decode(b []byte) (Frame, error) {
	var f Frame
	if len(b) > MaxFrameBytes {
		return f, fmt.Errorf("%w: %d bytes is over the %d-byte bound", ErrFrame, len(b), MaxFrameBytes)
	}
	if err := Strict(b, &f); err != nil {
		return f, err
	}
	if f.V != Major {
		return f, fmt.Errorf("%w: protocol version %d, this side speaks %d", ErrFrame, f.V, Major)
	}
	if !f.Kind.known() {
		return f, fmt.Errorf("%w: unknown kind %q", ErrFrame, f.Kind)
	}
	if len(f.ID) > MaxNameBytes {
		return f, fmt.Errorf("%w: id over %d bytes", ErrFrame, MaxNameBytes)
	}
	return f, nil
}

// Strict decodes exactly one JSON value from b into v, refusing unknown
// members and trailing data.
func Strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrFrame, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: trailing data after the JSON value", ErrFrame)
	}
	return nil
}

// DecodeBody decodes f's body strictly into v and validates it.
func DecodeBody[T interface{ Validate() error }](f Frame, v T) error {
	if len(f.Body) == 0 {
		return fmt.Errorf("%w: a %s frame needs a body", ErrFrame, f.Kind)
	}
	if err := Strict(f.Body, v); err != nil {
		return err
	}
	return v.Validate()
}
