package workflowdb

import (
	"fmt"

	"github.com/webcodex/webcodex/internal/workflow"
)

// encodeHeader is sess as canonical JSON: exactly the bytes json.Marshal
// gives (TestEncodeHeaderIsJSONMarshal), written by Session.AppendJSON,
// since every append re-encodes its session's header.
func encodeHeader(sess workflow.Session) string {
	b, ok := sess.AppendJSON(make([]byte, 0, 640))
	if !ok {
		panic(fmt.Sprintf("workflowdb: session %s has a time JSON cannot encode", sess.ID))
	}
	return string(b)
}
