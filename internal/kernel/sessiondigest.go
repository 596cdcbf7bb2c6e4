package kernel

import "github.com/webcodex/webcodex/internal/workflow"

// sessionDigest is the hex SHA-256 of the session record as read: of its
// encoding/json form (json.Marshal of workflow.Session, which
// Session.AppendJSON writes without reflection); "" when the record
// cannot be encoded (a time outside RFC 3339's range), as json.Marshal
// would fail.
func sessionDigest(s workflow.Session) string {
	var buf [512]byte
	b, ok := s.AppendJSON(buf[:0])
	if !ok {
		return ""
	}
	return digest(b)
}
