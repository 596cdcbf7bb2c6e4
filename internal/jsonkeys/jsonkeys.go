// Package jsonkeys finds repeated keys in a JSON document in one pass over
// its bytes, without decoding it. encoding/json keeps the last of two equal
// keys silently, which lets two readers of the same bytes disagree; the
// transports and the kernel refuse such arguments, and a token-by-token
// walk (json.Decoder.Token) costs an allocation per token — more than the
// rest of a small call's argument handling together.
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// smallObject is the number of keys an object holds before its keys are
// looked up in a map instead of a list.
const smallObject = 16

// FirstDuplicate reports the first key, in document order, that repeats a
// key of the same object, at any depth. Keys are compared as JSON decodes
// them (so "a" and "\u0061" are equal, and invalid UTF-8 compares as
// encoding/json replaces it). raw must be valid JSON: for other input the
// answer means nothing, but FirstDuplicate still returns.
func FirstDuplicate(raw []byte) (key string, found bool) {
	type frame struct {
		object  bool
		wantKey bool
		keys    []string
		set     map[string]struct{}
	}
	var stack []frame
	for i := 0; i < len(raw); {
		switch c := raw[i]; c {
		case '{', '[':
			if n := len(stack); n < cap(stack) {
				stack = stack[:n+1]
				stack[n].object, stack[n].wantKey = c == '{', c == '{'
				stack[n].keys, stack[n].set = stack[n].keys[:0], nil
			} else {
				stack = append(stack, frame{object: c == '{', wantKey: c == '{'})
			}
			i++
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			i++
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].wantKey = true
			}
			i++
		case '"':
			end := stringEnd(raw, i)
			if end < 0 {
				return "", false
			}
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				f := &stack[n-1]
				f.wantKey = false
				k := decodeKey(raw[i:end])
				if f.set != nil {
					if _, dup := f.set[k]; dup {
						return k, true
					}
					f.set[k] = struct{}{}
				} else {
					for _, seen := range f.keys {
						if seen == k {
							return k, true
						}
					}
					f.keys = append(f.keys, k)
					if len(f.keys) > smallObject {
						f.set = make(map[string]struct{}, 2*smallObject)
						for _, seen := range f.keys {
							f.set[seen] = struct{}{}
						}
					}
				}
			}
			i = end
		default:
			i++
		}
	}
	return "", false
}

// stringEnd returns the index just after the string starting with the
// quote at raw[start], or -1 when it does not end.
func stringEnd(raw []byte, start int) int {
	for i := start + 1; i < len(raw); {
		j := bytes.IndexAny(raw[i:], `"\`)
		if j < 0 {
			return -1
		}
		i += j
		if raw[i] == '"' {
			return i + 1
		}
		i += 2 // a backslash and the byte it escapes
	}
	return -1
}

// decodeKey returns the string a quoted JSON key decodes to.
func decodeKey(quoted []byte) string {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return string(inner)
	}
	return s
}

// Member is one top-level member of a JSON object.
type Member struct {
	// Key is the member's key as JSON decodes it.
	Key string
	// Quoted is the key as written, quotes included; Value the bytes of
	// its value.
	Quoted, Value []byte
}

// Members returns the top-level members of the JSON object raw in their
// order, or ok=false when raw is not an object. raw must be valid JSON:
// for other input the answer means nothing, but Members still returns.
func Members(raw []byte) (members []Member, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil, true
	}
	for i < len(raw) && raw[i] == '"' {
		end := stringEnd(raw, i)
		if end < 0 {
			return nil, false
		}
		m := Member{Key: decodeKey(raw[i:end]), Quoted: raw[i:end]}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		start := skipSpace(raw, i+1)
		end = valueEnd(raw, start)
		if end < 0 {
			return nil, false
		}
		m.Value = raw[start:end]
		members = append(members, m)
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == '}' {
			return members, true
		}
		if i >= len(raw) || raw[i] != ',' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
	}
	return nil, false
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just after the value starting at raw[start],
// or -1 when it does not end.
func valueEnd(raw []byte, start int) int {
	if start >= len(raw) {
		return -1
	}
	switch raw[start] {
	case '"':
		return stringEnd(raw, start)
	case '{', '[':
		depth := 0
		for i := start; i < len(raw); {
			switch raw[i] {
			case '"':
				if i = stringEnd(raw, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	for i := start; i < len(raw); i++ {
		switch raw[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return len(raw)
}
