package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jsonkeys"
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
	// One generic parse serves the validity and shape checks and schema
	// validation (the validator wants float64 numbers); trailing data is a
	// parse error. Repeated keys are then found in one pass over the bytes
	// (jsonkeys); input that is not JSON is described by the token walk,
	// which names the first bad token.
	var plain any
	if err := json.Unmarshal(raw, &plain); err != nil {
		if err := checkDuplicates(raw); err != nil {
			return failure.New(failure.InvalidArguments, "arguments: %v", err)
		}
		return failure.New(failure.InvalidArguments, "arguments are not valid JSON: %v", err)
	}
	if key, dup := jsonkeys.FirstDuplicate(raw); dup {
		return failure.New(failure.InvalidArguments, "arguments: duplicate key %q", key)
	}
	if _, ok := plain.(map[string]any); !ok {
		return failure.New(failure.InvalidArguments, "arguments must be a JSON object")
	}
	msg, err := validateArguments(schema, schema.Schema(), plain)
	if err != nil {
		return failure.Wrap(failure.Internal, err, "the tool's input schema cannot be used")
	}
	if msg != "" {
		return failure.New(failure.InvalidArguments, "arguments do not match the tool's schema: %s", msg)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return failure.New(failure.InvalidArguments, "arguments: %s", decodeMessage(err))
	}
	return nil
}

// decodeMessage describes an error of the typed decode (which the schema
// check already passed, so it is a value out of the Go type's range) in
// plain words with its JSON path, never Go type names.
func decodeMessage(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return "the value does not fit the tool's input"
	}
	path := "arguments"
	if te.Field != "" {
		path += "." + te.Field
	}
	want := "a value of another type"
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		want = fmt.Sprintf("an integer between %d and %d", int64(-1)<<(te.Type.Bits()-1), int64(1)<<(te.Type.Bits()-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = fmt.Sprintf("an integer between 0 and %d", uint64(1)<<te.Type.Bits()-1)
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.Map, reflect.Struct:
		want = "an object"
	}
	return fmt.Sprintf("at %s: got %s, want %s", path, te.Value, want)
}

// checkDuplicates walks the token stream of a JSON document and reports the
// first object that repeats a key or the first bad token. encoding/json
// would silently keep the last value, which lets two readers of the same
// bytes disagree. It describes input that is not valid JSON; valid JSON is
// checked by jsonkeys.FirstDuplicate, which agrees with it there.
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
