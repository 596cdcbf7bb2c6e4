package mcpserver

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/transport/wrapper"
	"github.com/webcodex/webcodex/internal/window"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Bounds of the MCP wrapper metadata.
const (
	// MaxRecordingSessionIDBytes bounds recording_session_id.
	MaxRecordingSessionIDBytes = 128
	// MaxAckIDs bounds ack_session_message_ids as the schema states it;
	// ids past it, and malformed ids, do not refuse the call: the kernel's
	// session_attention block reports them (workflow.MaxAckIDs).
	MaxAckIDs = workflow.MaxAckIDs
	// MaxContextKeys bounds the material keys of one context_request.
	MaxContextKeys = 8
	// MaxContextKeyBytes bounds one material key.
	MaxContextKeyBytes = 64
	// MaxWindowBytes bounds an accepted _meta["openai/session"] value.
	MaxWindowBytes = window.MaxRawBytes
)

// Wrapper member names, projected into every tool's MCP input schema and
// removed before the concrete arguments reach the kernel.
const (
	fieldRecorder = "recording_session_id"
	fieldAcks     = "ack_session_message_ids"
	fieldContext  = "context_request"
)

// wrapperMeta is the MCP-only metadata of one tools/call.
type wrapperMeta struct {
	recorder string
	acks     []string
	context  []string
}

// splitArguments removes the wrapper members from a tools/call arguments
// object (wrapper.Split: duplicate keys at any depth are refused) and
// validates them. context_request is a wrapper member only when modern
// (2026-07-28); a legacy call carrying it keeps it in its arguments, where
// the tool's schema refuses it as an unknown argument. Arguments that are
// not an object are returned unchanged for the kernel to reject. A wrapper
// member of the wrong type or over its bound is a failure.InvalidArguments,
// except the ids of ack_session_message_ids: an ACK never gates a call, so
// an array of strings passes whole and session_attention judges each id.
func splitArguments(raw json.RawMessage, modern bool) (json.RawMessage, wrapperMeta, error) {
	var w wrapperMeta
	names := []string{fieldRecorder, fieldAcks}
	if modern {
		names = append(names, fieldContext)
	}
	rest, members, err := wrapper.Split(raw, names...)
	if err != nil {
		return nil, w, err
	}
	if v, ok := members[fieldRecorder]; ok {
		if err := json.Unmarshal(v, &w.recorder); err != nil {
			return nil, w, failure.New(failure.InvalidArguments, "%s must be a string", fieldRecorder)
		}
		if len(w.recorder) > MaxRecordingSessionIDBytes {
			return nil, w, failure.New(failure.InvalidArguments, "%s is longer than %d bytes", fieldRecorder, MaxRecordingSessionIDBytes)
		}
	}
	if v, ok := members[fieldAcks]; ok {
		if err := json.Unmarshal(v, &w.acks); err != nil {
			return nil, w, failure.New(failure.InvalidArguments, "%s must be an array of message ids", fieldAcks)
		}
	}
	if v, ok := members[fieldContext]; ok {
		if err := json.Unmarshal(v, &w.context); err != nil {
			return nil, w, failure.New(failure.InvalidArguments, "%s must be an array of material keys", fieldContext)
		}
		if len(w.context) > MaxContextKeys {
			return nil, w, failure.New(failure.InvalidArguments, "%s holds more than %d keys", fieldContext, MaxContextKeys)
		}
		for _, k := range w.context {
			if k == "" || len(k) > MaxContextKeyBytes || !utf8.ValidString(k) {
				return nil, w, failure.New(failure.InvalidArguments, "%s keys must be 1-%d bytes", fieldContext, MaxContextKeyBytes)
			}
		}
	}
	return rest, w, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// clientWindow returns the principal-bound ClientWindow hash of the host
// window value _meta["openai/session"] (window.Hash), or "" when it is
// absent or malformed. The raw value is never returned, stored or logged.
func clientWindow(meta map[string]any, p auth.Principal) string {
	v, _ := meta["openai/session"].(string)
	return window.Hash(v, p)
}

// windowFacts are the audit window facts of call with result res: whether
// it was meaningful (window.Meaningful, decided there once) and, when the
// call carried a window, the window, its principal correlation and the
// relations the kernel's authority path established: a verified recorder
// (recording) and a successful work_on_project's session.
func windowFacts(c kernel.Call, res kernel.Result) audit.WindowFacts {
	w := audit.WindowFacts{Meaningful: window.Meaningful(res.Tool, res.Project, res.Refused)}
	if c.ClientWindow == "" {
		return w
	}
	w.ClientWindow, w.Principal = c.ClientWindow, window.PrincipalOf(c.Principal)
	if res.Recorder != "" {
		w.Relations = append(w.Relations, audit.WindowRelation{Kind: audit.RelationRecording, SessionID: res.Recorder})
	}
	if res.Tool == workOnProject && res.Success && res.BusinessSession != "" {
		w.Relations = append(w.Relations, audit.WindowRelation{Kind: audit.RelationWorkOnProject, SessionID: res.BusinessSession})
	}
	return w
}

// workOnProject is the canonical coding start/resume tool.
const workOnProject = "work_on_project"
