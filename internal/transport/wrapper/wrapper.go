// Package wrapper separates transport wrapper metadata (recording_session_id
// and, on MCP, ack_session_message_ids and context_request) from a tool's
// argument object. It is the one place both transports (MCP and GPT
// Actions) split an argument object, and it cuts the members out of the
// bytes so that what the kernel decodes is exactly what the client sent,
// minus the wrapper members.
package wrapper

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jsonkeys"
)

// Split removes the top-level members named in names from the JSON object
// raw and returns the remaining object and the removed members' raw values.
//
// Contract:
//   - a duplicate key in any object at any depth (wrapper members included)
//     is a failure.InvalidArguments, whether or not a wrapper member is
//     present;
//   - the remaining members are re-emitted byte for byte, in their order
//     (only the whitespace between members is dropped); with no named
//     member present, rest is raw itself;
//   - raw that is empty, not an object, not valid JSON or followed by more
//     data is returned unchanged with no members, for the kernel's strict
//     decoding to refuse in its own words.
func Split(raw []byte, names ...string) (rest []byte, members map[string]json.RawMessage, err error) {
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return raw, nil, nil
	}
	if !json.Valid(raw) {
		return splitTokens(raw, names)
	}
	// Valid JSON: one pass over the bytes finds a repeated key and one the
	// top-level members (jsonkeys); the token walk below, which costs an
	// allocation per token, would find the same.
	if key, dup := jsonkeys.FirstDuplicate(raw); dup {
		return nil, nil, duplicate(key)
	}
	all, ok := jsonkeys.Members(raw)
	if !ok {
		return raw, nil, nil
	}
	for _, m := range all {
		if slices.Contains(names, m.Key) {
			if members == nil {
				members = map[string]json.RawMessage{}
			}
			members[m.Key] = json.RawMessage(m.Value)
		}
	}
	if members == nil {
		return raw, nil, nil
	}
	var out bytes.Buffer
	out.Grow(len(raw))
	out.WriteByte('{')
	n := 0
	for _, m := range all {
		if slices.Contains(names, m.Key) {
			continue
		}
		if n > 0 {
			out.WriteByte(',')
		}
		n++
		out.Write(m.Quoted)
		out.WriteByte(':')
		out.Write(m.Value)
	}
	out.WriteByte('}')
	return out.Bytes(), members, nil
}

// splitTokens is Split over the token stream, for input that is not valid
// JSON: a repeated key before the first bad token is still refused as one.
func splitTokens(raw []byte, names []string) (rest []byte, members map[string]json.RawMessage, err error) {
	if trimmed := bytes.TrimLeft(raw, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return raw, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // '{'
		return raw, nil, nil
	}
	type member struct {
		key, value []byte
		wrapper    bool
	}
	var kept []member
	seen := map[string]bool{}
	prev := dec.InputOffset()
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return raw, nil, nil
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, nil, duplicate(key)
		}
		seen[key] = true
		keyEnd := dec.InputOffset()
		if err := walkValue(dec); err != nil {
			var dup dupError
			if errors.As(err, &dup) {
				return nil, nil, duplicate(string(dup))
			}
			return raw, nil, nil
		}
		valEnd := dec.InputOffset()
		m := member{
			key:     bytes.TrimLeft(raw[prev:keyEnd], " \t\r\n,"),
			value:   bytes.TrimLeft(raw[keyEnd:valEnd], " \t\r\n:"),
			wrapper: slices.Contains(names, key),
		}
		if m.wrapper {
			if members == nil {
				members = map[string]json.RawMessage{}
			}
			members[key] = json.RawMessage(m.value)
		}
		kept = append(kept, m)
		prev = valEnd
	}
	if _, err := dec.Token(); err != nil { // '}'
		return raw, nil, nil
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return raw, nil, nil // trailing data
	}
	if members == nil {
		return raw, nil, nil
	}
	var out bytes.Buffer
	out.Grow(len(raw))
	out.WriteByte('{')
	n := 0
	for _, m := range kept {
		if m.wrapper {
			continue
		}
		if n > 0 {
			out.WriteByte(',')
		}
		n++
		out.Write(m.key)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return out.Bytes(), members, nil
}

func duplicate(key string) error {
	return failure.New(failure.InvalidArguments, "arguments: duplicate key %q", clip(key))
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

type dupError string

func (d dupError) Error() string { return "duplicate key " + string(d) }

// walkValue consumes one JSON value from dec, refusing a repeated key in
// any object it contains. It keeps its own stack, so depth costs memory,
// not Go stack.
func walkValue(dec *json.Decoder) error {
	type frame struct {
		keys    map[string]bool // nil for an array
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.keys != nil && top.wantKey {
			if top.keys[s] {
				return dupError(s)
			}
			top.keys[s] = true
			top.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, wantKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended (scalar or closed container).
		if len(stack) == 0 {
			return nil
		}
		if t := stack[len(stack)-1]; t.keys != nil {
			t.wantKey = true
		}
	}
}
