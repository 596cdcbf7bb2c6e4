package kernel

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Ambient projections (DESIGN.md §2, step 11): after a call's effect and
// its recording, each wired Ambient may add a typed block to the
// model-facing ToolResult. A projection never gates, changes or
// re-decides the call: it runs only for calls that reached their tool,
// sees the outcome already sealed, and its blocks sit beside
// {success, output, error} (Result.Body and the evidence digest do not
// cover them). The session message board adds session_attention; the
// window plane adds its own members through the same seam.

// An Ambient adds its projection of one call to p. It must not block on
// durable writes (facts it keeps go behind the response) and must leave
// p's other members alone.
type Ambient interface {
	Project(ctx context.Context, c AmbientCall, p *Projections)
}

// AmbientCall is what a projection may know about a call.
type AmbientCall struct {
	Tool         string
	InvocationID string
	Source       Source
	Principal    auth.Principal
	// ClientWindow is the already-hashed host window ("" when none).
	ClientWindow string
	// Recorder is the call's verified recorder; nil when it had none.
	Recorder *workflow.Session
	// AckMessageIDs are the request's ack_session_message_ids, as sent.
	AckMessageIDs []string
	// Began is when the kernel admitted the call.
	Began time.Time
	// Success is the call's sealed outcome.
	Success bool
}

// Projections are the ambient blocks of one ToolResult, members of its
// wire shape beside success, output, error and warnings.
type Projections struct {
	// SessionAttention is the recording session's board attention.
	SessionAttention *workflow.Attention `json:"session_attention,omitempty"`
}

// Empty reports whether p holds no block.
func (p Projections) Empty() bool { return p.SessionAttention.Empty() }

// project runs the wired projections of a call that reached its tool,
// when its result goes to a model (MCP, REST) and its caller is still
// there.
func (k *Kernel) project(ctx context.Context, c Call, inv *Invocation, recorder *workflow.Session, began time.Time, res *Result) {
	if len(k.ambient) == 0 || (c.Source != SourceMCP && c.Source != SourceREST) || ctx.Err() != nil {
		return
	}
	ac := AmbientCall{Tool: inv.Tool, InvocationID: inv.ID, Source: c.Source, Principal: c.Principal,
		ClientWindow: c.ClientWindow, Recorder: recorder, AckMessageIDs: c.AckMessageIDs, Began: began, Success: res.Success}
	for _, a := range k.ambient {
		a.Project(ctx, ac, &res.Projections)
	}
}

// BoardAttention is the Ambient of the session message board: a call with
// a verified recorder gets that session's session_attention block, and
// ACK ids are judged (without a recorder every id is rejected as
// no_recording_session). See [workflow.Board.Attend].
type BoardAttention struct{ Board *workflow.Board }

// Project implements Ambient.
func (b BoardAttention) Project(ctx context.Context, c AmbientCall, p *Projections) {
	if b.Board == nil || (c.Recorder == nil && len(c.AckMessageIDs) == 0) {
		return
	}
	var id string
	if c.Recorder != nil {
		id = c.Recorder.ID
	}
	p.SessionAttention = b.Board.Attend(ctx, workflow.AttendParams{SessionID: id, Acks: c.AckMessageIDs, Before: c.Began})
}
