package workflow

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends s exactly as json.Marshal encodes it (members in
// declaration order, omitempty honoured, HTML-escaped strings, RFC 3339
// times), without reflection: the ledger header and the session digest
// are written on every call. ok is false (b then unusable) where
// json.Marshal fails: a time outside RFC 3339's years or zone offsets.
// TestSessionAppendJSONIsMarshal holds the two equal, every exported
// field set.
func (s *Session) AppendJSON(b []byte) (_ []byte, ok bool) {
	b = append(b, `{"session_id":`...)
	b = appendJSONString(b, s.ID)
	b = append(b, `,"project":`...)
	b = appendJSONString(b, s.Project)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, s.Title)
	b = append(b, `,"mode":`...)
	b = appendJSONString(b, string(s.Mode))
	b = append(b, `,"lifecycle":`...)
	b = appendJSONString(b, string(s.Lifecycle))
	b = append(b, `,"owner_authority_fingerprint":`...)
	b = appendJSONString(b, s.OwnerFingerprint)
	b = append(b, `,"execution_context":{`...)
	sep := false
	if s.ExecutionContext.DefaultCwd != "" {
		b = append(b, `"default_cwd":`...)
		b = appendJSONString(b, s.ExecutionContext.DefaultCwd)
		sep = true
	}
	if s.ExecutionContext.DefaultShell != "" {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"default_shell":`...)
		b = appendJSONString(b, string(s.ExecutionContext.DefaultShell))
		sep = true
	}
	if s.ExecutionContext.Resource != "" {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"resource":`...)
		b = appendJSONString(b, s.ExecutionContext.Resource)
	}
	b = append(b, `},"created_at":`...)
	if b, ok = appendJSONTime(b, s.CreatedAt); !ok {
		return b, false
	}
	b = append(b, `,"updated_at":`...)
	if b, ok = appendJSONTime(b, s.UpdatedAt); !ok {
		return b, false
	}
	if s.ClosedAt != nil {
		b = append(b, `,"closed_at":`...)
		if b, ok = appendJSONTime(b, *s.ClosedAt); !ok {
			return b, false
		}
	}
	b = append(b, `,"events_observed":`...)
	b = strconv.AppendInt(b, s.EventsObserved, 10)
	b = append(b, `,"retention_truncated":`...)
	b = strconv.AppendBool(b, s.RetentionTruncated)
	if s.EventsPurged != 0 {
		b = append(b, `,"events_purged":`...)
		b = strconv.AppendInt(b, s.EventsPurged, 10)
	}
	b = append(b, `,"counters":{"tool_calls":`...)
	b = strconv.AppendInt(b, s.Counters.ToolCalls, 10)
	b = append(b, `,"tool_failures":`...)
	b = strconv.AppendInt(b, s.Counters.ToolFailures, 10)
	b = append(b, `,"instructions":`...)
	b = strconv.AppendInt(b, s.Counters.Instructions, 10)
	b = append(b, `,"guard_denials":`...)
	b = strconv.AppendInt(b, s.Counters.GuardDenials, 10)
	if s.Counters.Replays != 0 {
		b = append(b, `,"replays":`...)
		b = strconv.AppendInt(b, s.Counters.Replays, 10)
	}
	b = append(b, '}')
	if len(s.JobMarkers) > 0 {
		b = append(b, `,"job_markers":[`...)
		for i, m := range s.JobMarkers {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, m)
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

// appendJSONTime appends t as time.Time.MarshalJSON does; ok is false
// where it fails.
func appendJSONTime(b []byte, t time.Time) ([]byte, bool) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, false
	}
	return append(b, '"'), true
}

// appendJSONString appends s as a JSON string the way json.Marshal
// writes one: <, > and & escaped, control characters escaped (\b, \f,
// \n, \r, \t short), invalid UTF-8 replaced by \ufffd, and U+2028 and
// U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendJSONStrings appends ss exactly as json.Marshal encodes a non-nil
// []string (strings escaped as appendJSONString does): the ledger stores
// an event's path lists this way on every call.
// FuzzAppendJSONStringsIsMarshal holds the two equal.
func AppendJSONStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}
