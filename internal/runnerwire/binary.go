package runnerwire

import (
	"encoding/binary"
	"fmt"
)

// Bulk bytes travel as binary WebSocket messages, not JSON: a fixed header
// and the bytes as they are, so that a process's output and an operation's
// result cross with no encoding pass. The layout is
//
//	type (1) | major (1) | stream (1: stdout, 2: stderr, 3: report; 0 otherwise)
//	| generation (8, big endian) | offset (8, big endian; 0 but for output)
//	| id length (1) | id | data
//
// and the whole message is at most MaxFrameBytes.
const binaryHeaderBytes = 1 + 1 + 1 + 8 + 8 + 1

// Binary message types.
const (
	// BinOutput is a chunk of a started process's output (Stream,
	// Offset).
	BinOutput byte = 'O'
	// BinPart is a piece of a request's JSON result; more follow.
	BinPart byte = 'P'
	// BinResult is the last (or only) piece of a request's JSON result:
	// it answers the request like a Response with that result.
	BinResult byte = 'R'
	// BinSkip says the bytes of a process's Stream before Offset that
	// were not sent will never be: the runner's spool no longer holds
	// them. No data; output continues at Offset.
	BinSkip byte = 'S'
)

// MaxBinaryIDBytes bounds the request id a binary message carries.
const MaxBinaryIDBytes = 64

// MaxBinaryDataBytes bounds the data of one binary message: MaxFrameBytes
// less the largest header.
const MaxBinaryDataBytes = MaxFrameBytes - binaryHeaderBytes - MaxBinaryIDBytes

// A Binary is one binary message.
type Binary struct {
	Type   byte
	Gen    uint64
	ID     string
	Stream string // BinOutput only
	Offset int64  // BinOutput only
	Data   []byte
}

// EncodeBinary builds the message of m.
func EncodeBinary(m Binary) ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, binaryHeaderBytes+len(m.ID)+len(m.Data))
	stream := byte(0)
	switch m.Stream {
	case Stdout:
		stream = 1
	case Stderr:
		stream = 2
	case Report:
		stream = 3
	}
	b = append(b, m.Type, Major, stream)
	b = binary.BigEndian.AppendUint64(b, m.Gen)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Offset))
	b = append(b, byte(len(m.ID)))
	b = append(b, m.ID...)
	return append(b, m.Data...), nil
}

// DecodeBinary parses a binary message. Its Data aliases b.
func DecodeBinary(b []byte) (Binary, error) {
	var m Binary
	if len(b) > MaxFrameBytes {
		return m, fmt.Errorf("%w: %d bytes is over the %d-byte bound", ErrFrame, len(b), MaxFrameBytes)
	}
	if len(b) < binaryHeaderBytes {
		return m, bad("a binary message of %d bytes", len(b))
	}
	if b[1] != Major {
		return m, bad("a binary message of protocol version %d, this side speaks %d", b[1], Major)
	}
	m.Type = b[0]
	switch b[2] {
	case 0:
	case 1:
		m.Stream = Stdout
	case 2:
		m.Stream = Stderr
	case 3:
		m.Stream = Report
	default:
		return m, bad("unknown stream %d", b[2])
	}
	m.Gen = binary.BigEndian.Uint64(b[3:11])
	off := binary.BigEndian.Uint64(b[11:19])
	if off > 1<<62 {
		return m, bad("offset out of range")
	}
	m.Offset = int64(off)
	n := int(b[19])
	rest := b[binaryHeaderBytes:]
	if n > len(rest) {
		return m, bad("a bad id length")
	}
	m.ID, m.Data = string(rest[:n]), rest[n:]
	return m, m.validate()
}

func (m Binary) validate() error {
	if m.ID == "" || len(m.ID) > MaxBinaryIDBytes {
		return bad("a binary message's id must be 1-%d bytes", MaxBinaryIDBytes)
	}
	if len(m.Data) > MaxBinaryDataBytes {
		return bad("a binary message holds at most %d bytes", MaxBinaryDataBytes)
	}
	switch m.Type {
	case BinOutput:
		o := Output{Stream: m.Stream, Offset: m.Offset, Data: m.Data}
		return o.Validate()
	case BinSkip:
		if len(m.Data) != 0 || m.Stream == "" || m.Offset <= 0 {
			return bad("a skip names a stream and the offset output continues at, and carries no data")
		}
		return nil
	case BinPart, BinResult:
		if m.Stream != "" || m.Offset != 0 {
			return bad("a result piece has no stream or offset")
		}
		if m.Type == BinPart && len(m.Data) == 0 {
			return bad("an empty result part")
		}
		return nil
	}
	return bad("unknown binary message type %q", m.Type)
}
