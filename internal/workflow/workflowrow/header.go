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
