package kernel

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/intent"
	"github.com/webcodex/webcodex/internal/readset"
	"github.com/webcodex/webcodex/internal/window"
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
	// Project is the call's resolved project ("" none); BusinessSession
	// the session the call created, resumed or adopted ("" none);
	// Refused whether it was refused before its tool ran.
	Project         string
	BusinessSession string
	// RecordingSessionID is the recorder the request named, as sent.
	RecordingSessionID string
	// Recorder is the call's verified recorder; nil when it had none.
	Recorder *workflow.Session
	// AckMessageIDs are the request's ack_session_message_ids, as sent.
	AckMessageIDs []string
	// Began is when the kernel admitted the call.
	Began time.Time
	// Success is the call's sealed outcome.
	Success bool
	// ChangedPaths are the project-relative paths the call changed on
	// Project (what a failed call managed to change too; none for a dry
	// run), as the tool reported them (Invocation.Change).
	ChangedPaths []string
	// Digests are the whole-file digests the call saw (Invocation.Saw;
	// none for a dry run).
	Digests []Digest
}

// Projections are the ambient blocks of one ToolResult, members of its
// wire shape beside success, output, error and warnings.
type Projections struct {
	// SessionAttention is the recording session's board attention.
	SessionAttention *workflow.Attention `json:"session_attention,omitempty"`
	// PeerMessages are the peer messages delivered to the caller's window.
	PeerMessages *window.Delivery `json:"peer_messages,omitempty"`
	// PeerAwareness is the hint that other windows of the principal are
	// recently active on the call's project (shown when that set changes).
	PeerAwareness *window.Awareness `json:"peer_awareness,omitempty"`
	// RecorderContinuity is the recorder continuity gap diagnostic.
	RecorderContinuity *RecorderContinuity `json:"recorder_continuity,omitempty"`
	// Overlap names other sessions' declared intents that meet the
	// caller's session's intent or the paths this call changed.
	Overlap *intent.Notice `json:"overlap,omitempty"`
	// ChangedSinceRead tells the call's session which files it read have
	// changed since (decision 0080).
	ChangedSinceRead *readset.Notices `json:"changed_since_read,omitempty"`

	// ackClaimed are the ack ids an earlier projection judged (ids of
	// the window's peer messages): later ones leave them alone.
	ackClaimed map[string]bool
}

// Empty reports whether p holds no block.
func (p Projections) Empty() bool {
	return p.SessionAttention.Empty() && p.PeerMessages.Empty() && p.PeerAwareness == nil && p.RecorderContinuity == nil &&
		p.Overlap.Empty() && p.ChangedSinceRead == nil
}

// RecorderContinuity is the recorder continuity gap diagnostic: this
// successful project call had no recorder, and the caller's window had a
// recent explicit affinity to SuggestedSessionID, which is active, on
// this project and authorized for the caller. It is a suggestion only:
// the call is recorded in no session, and the next call has no recorder
// either unless it names one.
type RecorderContinuity struct {
	Diagnostic         string `json:"diagnostic"`
	SuggestedSessionID string `json:"suggested_recording_session_id"`
	Hint               string `json:"hint"`
}

// DiagnosticRecorderGap names the recorder continuity gap diagnostic.
const DiagnosticRecorderGap = "recorder_continuity_gap"

// RecorderGap is the Ambient of the recorder continuity gap: Suggest
// returns the session to suggest for a call, if any (the composition root
// decides it, see app.RecorderContinuityGap).
type RecorderGap struct {
	Suggest func(ctx context.Context, c AmbientCall) (string, bool)
}

// Project implements Ambient.
func (g RecorderGap) Project(ctx context.Context, c AmbientCall, p *Projections) {
	if g.Suggest == nil || !c.Success || c.Recorder != nil {
		return
	}
	id, ok := g.Suggest(ctx, c)
	if !ok {
		return
	}
	p.RecorderContinuity = &RecorderContinuity{Diagnostic: DiagnosticRecorderGap, SuggestedSessionID: id,
		Hint: "this call was recorded in no session; to record later calls in " + id + " pass it as recording_session_id"}
}

// PeerDelivery is the Ambient of Window Peers: a call carrying a
// ClientWindow gets the peer_messages block of that window, and the ack
// ids naming its peer messages are judged there (see
// [window.Service.Deliver]); a meaningful one may get the peer_awareness
// hint ([window.Service.Aware]). It must run before BoardAttention.
type PeerDelivery struct{ Windows *window.Service }

// Project implements Ambient.
func (d PeerDelivery) Project(ctx context.Context, c AmbientCall, p *Projections) {
	if d.Windows == nil || c.ClientWindow == "" {
		return
	}
	// Ids past workflow.MaxAckIDs are the board's to reject (over_limit).
	acks := c.AckMessageIDs[:min(len(c.AckMessageIDs), workflow.MaxAckIDs)]
	b, claimed := d.Windows.Deliver(ctx, window.DeliverParams{Principal: c.Principal, Window: c.ClientWindow, Acks: acks, Before: c.Began})
	p.PeerMessages = b
	p.PeerAwareness = d.Windows.Aware(ctx, c.Principal, c.ClientWindow, c.Tool, c.Project)
	if len(claimed) > 0 {
		if p.ackClaimed == nil {
			p.ackClaimed = map[string]bool{}
		}
		for id := range claimed {
			p.ackClaimed[id] = true
		}
	}
}

// project runs the wired projections of a call that reached its tool,
// when its result goes to a model (MCP, REST) and its caller is still
// there.
func (k *Kernel) project(ctx context.Context, c Call, inv *Invocation, recorder *workflow.Session, began time.Time, res *Result) {
	if len(k.ambient) == 0 || (c.Source != SourceMCP && c.Source != SourceREST) || ctx.Err() != nil {
		return
	}
	ac := AmbientCall{Tool: inv.Tool, InvocationID: inv.ID, Source: c.Source, Principal: c.Principal,
		ClientWindow: c.ClientWindow, Project: res.Project, BusinessSession: res.BusinessSession, RecordingSessionID: c.RecordingSessionID,
		Recorder: recorder, AckMessageIDs: c.AckMessageIDs, Began: began, Success: res.Success}
	if !res.DryRun {
		ac.ChangedPaths, ac.Digests = res.ChangedPaths, inv.sawDigests()
	}
	for _, a := range k.ambient {
		a.Project(ctx, ac, &res.Projections)
	}
	res.Projections.ackClaimed = nil
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
	p.SessionAttention = b.Board.Attend(ctx, workflow.AttendParams{SessionID: id, Acks: c.AckMessageIDs, Before: c.Began, Claimed: p.ackClaimed})
}

// NoExtensionRuntime is the reason skills or plugins are unavailable
// wherever they are projected (context_request's skills.catalog and
// plugins.catalog, work_on_project's extension catalog) by a server wired
// without a skill or plugin (MCP provider) catalog.
const NoExtensionRuntime = "no_runtime"
