package app

import (
	"context"
	"path/filepath"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/window"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Attention is what `webcodex attention` reports for one principal: the
// session's unresolved ACK-required messages and open todos, and the peer
// messages retained for its window. Listing is not delivery, reading or
// acknowledgement: nothing is marked.
type Attention struct {
	SessionID string `json:"session_id,omitempty"`
	// AckRequired are the session's open messages that request an ACK.
	AckRequired []workflow.Message `json:"ack_required_messages"`
	// OpenTodos are the session's open todos.
	OpenTodos []workflow.Message `json:"open_todos"`
	// SessionMore is true when the session has more open messages than
	// one page (workflow.MessageListMax) showed.
	SessionMore bool `json:"session_more"`
	// PeerMessages are the peer messages retained for the window.
	PeerMessages []window.Message `json:"peer_messages"`
	// Needed is true when any list is not empty.
	Needed bool `json:"attention_needed"`
}

// CheckAttention reads, without changing anything, what is waiting for
// principal p: on the Workflow Session sessionID (when given; p must pass
// the ordinary authority check) and for the host window key windowKey
// (when given; hashed for p exactly as the transports hash it, so p must
// be the principal the host's MCP client uses).
func CheckAttention(ctx context.Context, st *Stores, p auth.Principal, sessionID, windowKey string) (Attention, error) {
	out := Attention{SessionID: sessionID, AckRequired: []workflow.Message{}, OpenTodos: []workflow.Message{}, PeerMessages: []window.Message{}}
	if sessionID != "" {
		// A principal bound to one project is shown that project's
		// sessions only (no project check for any other: Project "").
		v := workflow.NewService(st.Workflow, nil).ReadClaim(ctx, sessionID).Check(workflow.Check{Fingerprint: p.AuthorityFingerprint(), Project: p.Project})
		if !v.Verified() {
			return Attention{}, v.Error()
		}
		msgs, more, err := workflow.NewBoard(st.Workflow, nil).List(ctx, sessionID, workflow.MessageFilter{Status: workflow.MessageOpen, Limit: workflow.MessageListMax})
		if err != nil {
			return Attention{}, err
		}
		out.SessionMore = more
		for _, m := range msgs {
			if m.RequiresAck {
				out.AckRequired = append(out.AckRequired, m)
			}
			if m.Kind == workflow.MessageTodo {
				out.OpenTodos = append(out.OpenTodos, m)
			}
		}
	}
	if windowKey != "" {
		w := window.Hash(windowKey, p)
		if w == "" {
			return Attention{}, failure.New(failure.InvalidArguments, "the window key must be 1-%d bytes without control or space characters", window.MaxRawBytes)
		}
		msgs, err := window.NewService(st.Window, nil, nil).Waiting(ctx, p, w)
		if err != nil {
			return Attention{}, err
		}
		out.PeerMessages = msgs
	}
	out.Needed = len(out.AckRequired)+len(out.OpenTodos)+len(out.PeerMessages) > 0
	return out, nil
}

// AttentionPrincipal is the principal of an offline attention check: the
// principal the server serving cfg.DataDir gives token, or, when token is
// "", the local user. token is the caller's credential, never taken for
// a bootstrap credential of its own: it is verified against auth.db like
// any request's, and is the bootstrap admin only when it is the one the
// last server to listen on the data directory accepts
// (auth.ServedBootstrapFile). Anything else is unauthenticated.
func AttentionPrincipal(ctx context.Context, st *Stores, cfg Config, token string) (auth.Principal, error) {
	if token == "" {
		return auth.LocalUser(), nil
	}
	served, err := auth.ReadServedBootstrap(filepath.Join(cfg.DataDir, auth.ServedBootstrapFile))
	if err != nil {
		return auth.Principal{}, err
	}
	svc, err := authService(st, auth.Options{BootstrapDigest: served})
	if err != nil {
		return auth.Principal{}, err
	}
	return svc.Authenticate(ctx, token)
}
