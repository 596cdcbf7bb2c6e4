package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/webcodex/webcodex/internal/failure"
)

// MaxArgumentsBytes bounds the raw arguments of one call.
const MaxArgumentsBytes = 4 << 20

// decodeStrict decodes raw into v after checking that it is one JSON object
// with no duplicate keys at any depth and that it validates against the
// tool's input schema (which forbids unknown members and wrong types).
func decodeStrict(raw json.RawMessage, schema *jsonschema.Resolved, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	if len(raw) > MaxArgumentsBytes {
		return failure.New(failure.RequestTooLarge, "arguments exceed %d bytes", MaxArgumentsBytes)
	}
	if err := checkDuplicates(raw); err != nil {
		return failure.New(failure.InvalidArguments, "arguments: %v", err)
	}
	// One generic parse serves the shape check and schema validation (the
	// validator wants float64 numbers); trailing data is a parse error.
	var plain any
	if err := json.Unmarshal(raw, &plain); err != nil {
		return failure.New(failure.InvalidArguments, "arguments are not valid JSON: %v", err)
	}
	if _, ok := plain.(map[string]any); !ok {
		return failure.New(failure.InvalidArguments, "arguments must be a JSON object")
	}
	if err := schema.Validate(plain); err != nil {
		return failure.New(failure.InvalidArguments, "arguments do not match the tool's schema: %s", schemaMessage(err))
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return failure.New(failure.InvalidArguments, "arguments: %v", err)
	}
	return nil
}

func schemaMessage(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "validating root: "); i >= 0 {
		msg = msg[i+len("validating root: "):]
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return msg
}

// checkDuplicates walks the token stream of a JSON document and reports the
// first object that repeats a key. encoding/json would silently keep the
// last value, which lets two readers of the same bytes disagree.
func checkDuplicates(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				if top != nil && top.keys != nil {
					top.wantKey = true
				}
				stack = append(stack, &frame{keys: map[string]bool{}, wantKey: true})
			case '[':
				if top != nil && top.keys != nil {
					top.wantKey = true
				}
				stack = append(stack, &frame{})
			case '}', ']':
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.keys != nil && top.wantKey {
				if top.keys[t] {
					return fmt.Errorf("duplicate key %q", t)
				}
				top.keys[t] = true
				top.wantKey = false
				continue
			}
			if top != nil && top.keys != nil {
				top.wantKey = true
			}
		default:
			if top != nil && top.keys != nil {
				top.wantKey = true
			}
		}
	}
}
