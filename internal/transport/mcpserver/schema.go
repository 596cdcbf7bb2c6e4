package mcpserver

import (
	"slices"
	"sort"
	"strings"
)

// The tools/list projection of kernel schemas (decision 0023): every byte of
// tools/list costs the agent's context, so output schemas are outlined and
// no schema uses a type array. Input schemas keep every argument and its
// documentation; the kernel validates arguments against its own resolved
// schema, never against these projections.

// maxOutlineKeys bounds how many member names a nested object's outline
// names before it says how many more there are.
const maxOutlineKeys = 8

// outlineMembers says whether an outline names the members of its nested
// objects (measured in decision 0023).
var outlineMembers = false

// Portable rewrites schema in place so that no "type" is an array: a
// nullable type {"type": ["null", "X"]} becomes {"type": "X"}, and a union
// of several non-null types becomes an anyOf of single types. Many MCP
// clients reject or warn on type arrays. In an input schema a member that
// may be null is one that may be absent (the kernel decodes null as
// absent); an output member that may be null is published by outline as an
// anyOf with null instead (decision 0046).
func Portable(v any) {
	switch x := v.(type) {
	case map[string]any:
		if ts, ok := x["type"].([]any); ok {
			var kept []any
			for _, t := range ts {
				if t != "null" {
					kept = append(kept, t)
				}
			}
			switch len(kept) {
			case 0:
				x["type"] = "null"
			case 1:
				x["type"] = kept[0]
			default:
				delete(x, "type")
				alts := make([]any, len(kept))
				for i, t := range kept {
					alts[i] = map[string]any{"type": t}
				}
				x["anyOf"] = alts
			}
		}
		for _, c := range x {
			Portable(c)
		}
	case []any:
		for _, c := range x {
			Portable(c)
		}
	}
}

// outline returns the output schema a tools/list advertises for a tool's
// output object (decision 0046, correcting 0023): its top-level members
// with their types, none of them required, so that the output of a failed
// call (failure_kind, recovery_kind, state_changed and the failure's
// details) validates against it as well as a success does. A member whose
// kernel type admits null is published as an anyOf of its type and null
// (no type arrays). A member whose value is an object or an array of
// objects is reduced to its type; scalars keep their enum, arrays of
// scalars their item type.
func outline(schema map[string]any) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	out := map[string]any{"type": "object"}
	if len(props) == 0 {
		return out
	}
	p := make(map[string]any, len(props))
	for k, v := range props {
		m, _ := v.(map[string]any)
		null := admitsNull(m)
		Portable(m)
		b := brief(m)
		if null {
			b = map[string]any{"anyOf": []any{b, map[string]any{"type": "null"}}}
		}
		p[k] = b
	}
	out["properties"] = p
	return out
}

// admitsNull says whether schema m's type admits null.
func admitsNull(m map[string]any) bool {
	switch t := m["type"].(type) {
	case string:
		return t == "null"
	case []any:
		return slices.Contains(t, any("null"))
	}
	return false
}

// brief is one member of an outline.
func brief(m map[string]any) map[string]any {
	t, _ := m["type"].(string)
	b := map[string]any{}
	if t != "" {
		b["type"] = t
	}
	switch t {
	case "object":
		if outlineMembers {
			if d := members(m); d != "" {
				b["description"] = d
			}
		}
	case "array":
		items, _ := m["items"].(map[string]any)
		it, _ := items["type"].(string)
		switch it {
		case "object":
			if outlineMembers {
				if d := members(items); d != "" {
					b["description"] = "of " + d
				}
			}
		case "array", "":
		default:
			b["items"] = map[string]any{"type": it}
		}
	default:
		if e, ok := m["enum"]; ok {
			b["enum"] = e
		}
	}
	if len(b) == 0 {
		b["type"] = "object" // an untyped member (any JSON value)
	}
	return b
}

// members names the members of an object schema in one line: the required
// ones first, then the rest, at most maxOutlineKeys of them.
func members(m map[string]any) string {
	props, _ := m["properties"].(map[string]any)
	if len(props) == 0 {
		return ""
	}
	var req []string
	if rs, ok := m["required"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				req = append(req, s)
			}
		}
	}
	var rest []string
	for k := range props {
		if !slices.Contains(req, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	names := append(req, rest...)
	more := ""
	if len(names) > maxOutlineKeys {
		more = ", ..."
		names = names[:maxOutlineKeys]
	}
	return "{" + strings.Join(names, ", ") + more + "}"
}
