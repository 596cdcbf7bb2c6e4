// Package peers registers the Window Peer tools: list_peers (discovery),
// post_peer_message and current_window_activity.
//
// Each works only for a call that carries a client window (the
// principal-bound hash the transport derives from _meta["openai/session"]
// or the REST window header); without one it is
// client_window_unavailable. A peer route grants nothing: no Workflow
// Session, Project authority or view of the peer's work.
package peers

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/window"
)

// Category is the tools' telemetry category.
const Category = "peers"

// Tools holds the window service the tools use.
type Tools struct {
	Windows *window.Service
}

// Register adds the peer tools to reg.
func Register(reg *kernel.Registry, t *Tools) {
	scopes := []auth.Scope{auth.ScopeProjectRead}
	ro := kernel.Annotations{ReadOnly: true, Idempotent: true}
	kernel.Register(reg, kernel.Spec[ListInput, ListOutput]{
		Name:        window.ToolListPeers,
		Description: "Your other windows with recent (10 min, not 'online') activity on this project, as peer_ids for post_peer_message.",
		Category:    Category, Scopes: scopes, Annotations: ro,
		Handler: t.list,
	})
	kernel.Register(reg, kernel.Spec[PostInput, PostOutput]{
		Name:        window.ToolPostPeerMessage,
		Description: "Send a short message to one of your peer windows (peer_id from list_peers).",
		Category:    Category, Scopes: scopes, Mutates: true,
		Handler: t.post,
	})
	kernel.Register(reg, kernel.Spec[CurrentInput, window.Current]{
		Name:        window.ToolCurrentActivity,
		Description: "This window's own peer_id, recent project activity and waiting peer message count.",
		Category:    Category, Scopes: scopes, Annotations: ro,
		Handler: t.current,
	})
}

func (t *Tools) windows() (*window.Service, error) {
	if t.Windows == nil {
		return nil, failure.New(failure.Unavailable, "the window plane is not available")
	}
	return t.Windows, nil
}

// ListInput is the input of list_peers.
type ListInput struct {
	kernel.ProjectRef
}

// ListOutput is the result of list_peers.
type ListOutput struct {
	Peers []window.Peer `json:"peers"`
}

func (t *Tools) list(ctx context.Context, inv *kernel.Invocation, in ListInput) (ListOutput, error) {
	w, err := t.windows()
	if err != nil {
		return ListOutput{}, err
	}
	ps, err := w.Peers(ctx, inv.Principal, inv.Window, inv.Project.ID)
	if err != nil {
		return ListOutput{}, err
	}
	return ListOutput{Peers: ps}, nil
}

// PostInput is the input of post_peer_message.
type PostInput struct {
	PeerID      string          `json:"peer_id"`
	Message     string          `json:"message" jsonschema:"1-2000 characters"`
	RequiresAck bool            `json:"requires_ack,omitempty"`
	Priority    window.Priority `json:"priority,omitempty" jsonschema:"low, normal (default) or high"`
}

// PostOutput is the result of post_peer_message: the stored message's id
// and routes; storing is not delivery.
type PostOutput struct {
	MessageID  string    `json:"message_id"`
	FromPeerID string    `json:"from_peer_id"`
	ToPeerID   string    `json:"to_peer_id"`
	CreatedAt  time.Time `json:"created_at"`
}

func (t *Tools) post(ctx context.Context, inv *kernel.Invocation, in PostInput) (PostOutput, error) {
	w, err := t.windows()
	if err != nil {
		return PostOutput{}, err
	}
	m, err := w.Post(ctx, inv.Principal, inv.Window, window.PostParams{
		PeerID: in.PeerID, Body: in.Message, RequiresAck: in.RequiresAck, Priority: in.Priority,
	})
	if err != nil {
		return PostOutput{}, err
	}
	inv.Fact("peer_message_id", m.ID)
	return PostOutput{MessageID: m.ID, FromPeerID: m.FromPeer, ToPeerID: m.ToPeer, CreatedAt: m.CreatedAt}, nil
}

// CurrentInput is the input of current_window_activity.
type CurrentInput struct{}

func (t *Tools) current(ctx context.Context, inv *kernel.Invocation, _ CurrentInput) (window.Current, error) {
	w, err := t.windows()
	if err != nil {
		return window.Current{}, err
	}
	return w.CurrentActivity(ctx, inv.Principal, inv.Window)
}
