package workflowdb

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
)

// encodeHeader is sess as canonical JSON: exactly the bytes json.Marshal
// gives (TestEncodeHeaderIsJSONMarshal). Every append re-encodes its
// session's header, so the common shape (UTC times within years 0-9999,
// strings of printable ASCII that encoding/json leaves as they are) is
// written field by field, without reflection; any other header is
// encoded by json.Marshal itself.
func encodeHeader(sess workflow.Session) string {
	if b, ok := appendHeader(make([]byte, 0, 640), sess); ok {
		return string(b)
	}
	b, err := json.Marshal(sess)
	if err != nil {
		panic(err) // Session has only marshalable fields
	}
	return string(b)
}

// appendHeader appends sess in workflow.Session's field order and JSON
// names, and reports false (leaving b unusable) for a header outside the
// common shape.
func appendHeader(b []byte, s workflow.Session) ([]byte, bool) {
	ok := true
	str := func(key, v string) {
		b = append(b, key...)
		if ok = ok && plainASCII(v); ok {
			b = append(append(append(b, '"'), v...), '"')
		}
	}
	at := func(key string, t time.Time) {
		b = append(b, key...)
		if ok = ok && t.Location() == time.UTC && t.Year() >= 0 && t.Year() <= 9999; ok {
			b = append(t.AppendFormat(append(b, '"'), time.RFC3339Nano), '"')
		}
	}
	num := func(key string, n int64) { b = strconv.AppendInt(append(b, key...), n, 10) }
	str(`{"session_id":`, s.ID)
	str(`,"project":`, s.Project)
	str(`,"title":`, s.Title)
	str(`,"mode":`, string(s.Mode))
	str(`,"lifecycle":`, string(s.Lifecycle))
	str(`,"owner_authority_fingerprint":`, s.OwnerFingerprint)
	b = append(b, `,"execution_context":{`...)
	if s.ExecutionContext.DefaultCwd != "" {
		str(`"default_cwd":`, s.ExecutionContext.DefaultCwd)
	}
	if s.ExecutionContext.DefaultShell != "" {
		if s.ExecutionContext.DefaultCwd != "" {
			b = append(b, ',')
		}
		str(`"default_shell":`, string(s.ExecutionContext.DefaultShell))
	}
	b = append(b, '}')
	at(`,"created_at":`, s.CreatedAt)
	at(`,"updated_at":`, s.UpdatedAt)
	if s.ClosedAt != nil {
		at(`,"closed_at":`, *s.ClosedAt)
	}
	num(`,"events_observed":`, s.EventsObserved)
	b = strconv.AppendBool(append(b, `,"retention_truncated":`...), s.RetentionTruncated)
	num(`,"counters":{"tool_calls":`, s.Counters.ToolCalls)
	num(`,"tool_failures":`, s.Counters.ToolFailures)
	num(`,"instructions":`, s.Counters.Instructions)
	num(`,"guard_denials":`, s.Counters.GuardDenials)
	b = append(b, '}')
	if len(s.JobMarkers) > 0 {
		b = append(b, `,"job_markers":[`...)
		for i, m := range s.JobMarkers {
			key := ","
			if i == 0 {
				key = ""
			}
			str(key, m)
		}
		b = append(b, ']')
	}
	return append(b, '}'), ok
}

// plainASCII reports whether encoding/json writes v unchanged between
// quotes: printable ASCII without the characters it escapes.
func plainASCII(v string) bool {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
