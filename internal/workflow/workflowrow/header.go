// Package workflowrow is the stored form of the Workflow Session ledger's
// rows that both drivers keep byte for byte alike: a session's header as
// canonical JSON, and a board message column by column (times as Unix
// nanoseconds, 0 when unset; tags as a JSON array). It is shared by the
// SQLite store (workflowdb) and the PostgreSQL drivers (workflowpg), as
// authrow is by the auth stores.
package workflowrow

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/webcodex/webcodex/internal/workflow"
)

// EncodeHeader is sess as canonical JSON: exactly the bytes json.Marshal
// gives (workflowdb's TestEncodeHeaderIsJSONMarshal), written by
// Session.AppendJSON, since every append re-encodes its session's header.
// It panics on a time JSON cannot encode (a year outside 0-9999), which no
// session the workflow package builds has.
func EncodeHeader(sess workflow.Session) string {
	b, ok := sess.AppendJSON(make([]byte, 0, 640))
	if !ok {
		panic(fmt.Sprintf("workflowrow: session %s has a time JSON cannot encode", sess.ID))
	}
	return string(b)
}

// DecodeHeader is the session whose stored header is b. A member the
// Session type does not know, or a session that fails
// workflow.ValidateSession, is an error: a malformed row, never served.
func DecodeHeader(b []byte) (workflow.Session, error) {
	var sess workflow.Session
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&sess); err != nil {
		return workflow.Session{}, fmt.Errorf("header: %v", err)
	}
	if err := workflow.ValidateSession(sess); err != nil {
		return workflow.Session{}, err
	}
	return sess, nil
}

// PurgedHeader is what a retention purge batch (of at most batch events)
// that removed n of the retained events of the session stored as hdr
// leaves: the header marked (workflow.PurgedEvents) and the retained
// count, 0 when the batch found fewer events than asked (every event is
// gone, whatever the count said).
func PurgedHeader(hdr string, retained, n int64, batch int) (string, int64, error) {
	sess, err := DecodeHeader([]byte(hdr))
	if err != nil {
		return "", 0, err
	}
	workflow.PurgedEvents(&sess, n)
	left := retained - n
	if n < int64(batch) || left < 0 {
		left = 0
	}
	return EncodeHeader(sess), left, nil
}
