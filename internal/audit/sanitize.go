package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/webcodex/webcodex/internal/redact"
)

// secretKeyParts are substrings of a (lower-cased, '-'→'_') key that mark
// its value as secret.
var secretKeyParts = []string{
	"token", "api_key", "apikey", "authorization", "secret", "password", "passwd",
	"private_key", "pem", "id_rsa", "credential", "cookie",
}

// droppedKeys are fields whose values are bodies/outputs and never stored.
var droppedKeys = map[string]bool{
	"stdout": true, "stderr": true, "stdin": true, "diff": true, "text": true,
	"content": true, "base64": true, "output_text": true,
}

// digestKeys are fields whose string value is replaced by a digest shape.
var digestKeys = map[string]bool{
	"command_text": true, "script_text": true, "command": true, "script": true,
}

func normKey(k string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "-", "_")
}

// IsSecretKey reports whether a summary/ids key names a secret.
func IsSecretKey(k string) bool {
	n := normKey(k)
	for _, p := range secretKeyParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

// CommandDigest is the shape that replaces command/script text.
func CommandDigest(key, text string) map[string]any {
	kind := "command"
	if strings.Contains(normKey(key), "script") {
		kind = "script"
	}
	first, _, _ := strings.Cut(text, "\n")
	first = strings.TrimRight(first, "\r")
	sum := sha256.Sum256([]byte(text))
	lines := 0
	if text != "" {
		lines = strings.Count(text, "\n") + 1
		if strings.HasSuffix(text, "\n") {
			lines--
		}
	}
	return map[string]any{
		"kind":               kind,
		"line_count":         lines,
		"char_count":         len([]rune(text)),
		"sha256":             hex.EncodeToString(sum[:]),
		"first_line_preview": redact.Bounded(first, MaxFirstLinePreview),
	}
}

// SanitizeSummary returns a JSON-normalized, sanitized copy of summary:
// secret-looking keys have their values replaced by [REDACTED]; output and
// body fields are dropped; command/script text becomes a [CommandDigest];
// every remaining string is redacted and bounded; maps, arrays and depth
// are bounded.
func SanitizeSummary(summary map[string]any) map[string]any {
	if len(summary) == 0 {
		return map[string]any{}
	}
	out, _ := sanitizeValue(summary, 0).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

// jsonValue returns v in its generic JSON form (maps, slices, strings,
// json.Number, bools, nil).
func jsonValue(v any) (any, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var out any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if d.Decode(&out) != nil {
		return nil, false
	}
	return out, true
}

// plainKeys are the summary keys the middleware and the telemetry write
// on every event, each checked once here to take the default path of
// sanitizeValue unchanged (not dropped, secret or digested, and its own
// redacted, bounded form): they skip the per-key checks.
var plainKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range []string{"transport", "tool", SummaryErgonomics, SummaryToolSurface} {
		n := normKey(k)
		if !droppedKeys[n] && !IsSecretKey(k) && !digestKeys[n] && redact.Bounded(k, MaxFieldChars) == k {
			m[k] = true
		}
	}
	return m
}()

func sanitizeValue(v any, depth int) any {
	if depth >= MaxSummaryDepth {
		return TruncatedMarker
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, min(len(x), MaxSummaryKeys))
		for k, val := range x {
			if len(out) >= MaxSummaryKeys {
				out["_truncated"] = true
				break
			}
			if plainKeys[k] {
				out[k] = sanitizeValue(val, depth+1)
				continue
			}
			n := normKey(k)
			key := redact.Bounded(k, MaxFieldChars)
			switch {
			case droppedKeys[n]:
				continue
			case IsSecretKey(k):
				out[key] = RedactedMarker
			case digestKeys[n]:
				out[key] = digestValue(k, val, depth)
			default:
				out[key] = sanitizeValue(val, depth+1)
			}
		}
		return out
	case []any:
		n := min(len(x), MaxSummaryItems)
		out := make([]any, 0, n+1)
		for _, item := range x[:n] {
			out = append(out, sanitizeValue(item, depth+1))
		}
		if len(x) > n {
			out = append(out, TruncatedMarker)
		}
		return out
	case []string:
		items := make([]any, len(x))
		for i, s := range x {
			items[i] = s
		}
		return sanitizeValue(items, depth)
	case string:
		return redact.Bounded(x, MaxStringChars)
	case json.Number, bool, nil, int, int64, float64:
		return x
	case *int64:
		if x == nil {
			return nil
		}
		return *x
	case *ModelErgonomics:
		if x == nil {
			return nil
		}
		return x.sanitized()
	case ModelErgonomics:
		return x.sanitized()
	case *ToolSurface:
		if x == nil {
			return nil
		}
		return x.sanitized()
	case ToolSurface:
		return x.sanitized()
	default:
		// Any other Go value is sanitized in its JSON form.
		j, ok := jsonValue(x)
		if !ok {
			return "[unserializable]"
		}
		return sanitizeValue(j, depth)
	}
}

func digestValue(key string, v any, depth int) any {
	switch x := v.(type) {
	case string:
		return CommandDigest(key, x)
	case []any: // argv
		parts := make([]string, 0, len(x))
		for _, p := range x {
			if s, ok := p.(string); ok {
				parts = append(parts, s)
			} else {
				parts = append(parts, fmt.Sprint(p))
			}
		}
		return CommandDigest(key, strings.Join(parts, " "))
	default:
		return sanitizeValue(v, depth+1)
	}
}

// SanitizeIDs bounds and redacts an ids map; secret keys are redacted and
// body keys dropped.
func SanitizeIDs(ids map[string]string) map[string]string {
	out := make(map[string]string, min(len(ids), MaxIDs))
	for k, v := range ids {
		if len(out) >= MaxIDs {
			break
		}
		n := normKey(k)
		key := redact.Bounded(k, MaxFieldChars)
		switch {
		case droppedKeys[n]:
		case IsSecretKey(k):
			out[key] = RedactedMarker
		case digestKeys[n]:
			d := CommandDigest(k, v)
			out[key] = "sha256:" + d["sha256"].(string)
		default:
			out[key] = redact.Bounded(v, MaxFieldChars)
		}
	}
	return out
}

// Sanitize returns the write-time sanitized copy of ev (with attribution
// bounded and redacted).
func Sanitize(ev Event) Event {
	ev.Endpoint = redact.Bounded(ev.Endpoint, MaxFieldChars)
	ev.Operation = redact.Bounded(ev.Operation, MaxFieldChars)
	ev.ActionName = redact.Bounded(ev.ActionName, MaxFieldChars)
	ev.Project = redact.Bounded(ev.Project, MaxFieldChars)
	ev.Status = redact.Bounded(ev.Status, MaxFieldChars)
	ev.ErrorSummary = redact.Bounded(ev.ErrorSummary, MaxSummaryTextChars)
	ev.WarningSummary = redact.Bounded(ev.WarningSummary, MaxSummaryTextChars)
	files := make([]string, 0, min(len(ev.ChangedFiles), MaxChangedFiles))
	for _, f := range ev.ChangedFiles {
		if len(files) == MaxChangedFiles {
			break
		}
		files = append(files, redact.Bounded(f, MaxPathChars))
	}
	ev.ChangedFiles = files
	ev.IDs = SanitizeIDs(ev.IDs)
	ev.Summary = SanitizeSummary(ev.Summary)
	ev.Attribution = Attribution{
		PrincipalKind:   redact.Bounded(ev.Attribution.PrincipalKind, MaxFieldChars),
		PrincipalUserID: redact.Bounded(ev.Attribution.PrincipalUserID, MaxFieldChars),
		OAuthClientID:   redact.Bounded(ev.Attribution.OAuthClientID, MaxFieldChars),
	}
	ev.Window = ev.Window.sanitized()
	return ev
}

// dropSecretKeys is the read-time pass: secret-looking keys are removed.
func dropSecretKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if IsSecretKey(k) {
				continue
			}
			out[k] = dropSecretKeys(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = dropSecretKeys(item)
		}
		return out
	default:
		return v
	}
}

// JobIDCount is how many job ids an event's ids map carries: entries whose
// key names a job id (job_id, job_ids, *_job_id).
func JobIDCount(ids map[string]string) int {
	n := 0
	for k := range ids {
		if k := normKey(k); k == "job_id" || k == "job_ids" || strings.HasSuffix(k, "_job_id") {
			n++
		}
	}
	return n
}
