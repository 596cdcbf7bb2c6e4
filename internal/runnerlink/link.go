// Package runnerlink is the message link between the server and a
// `webcodex runner`: a bidirectional, ordered sequence of messages, each
// text or binary and at most runnerwire.MaxFrameBytes, which the protocol
// (runnerwire) travels on. Both sides import it; neither knows which
// transport carries its link.
//
// Two transports implement a Link:
//
//   - WebSocket: one WebSocket (github.com/coder/websocket) to
//     WebSocketPath, subprotocol runnerwire.Subprotocol, read limit
//     runnerwire.MaxFrameBytes.
//   - Long-poll: plain HTTP POSTs under PollPath, for proxies that break
//     WebSockets. "open" carries the hello and is answered with the
//     server's first message (the welcome or the reject) and an opaque
//     link id bound to the runner's token; "recv" is held up to PollHold
//     and returns a bounded batch of the server's messages (empty when
//     none came); "send" carries a bounded batch of the runner's messages;
//     "close" ends the link. The frames are the protocol's, unchanged.
//     Every request carries the sequence number of its first message: a
//     replayed, reordered or concurrent request ends the link, so a
//     message is delivered at most once and in order. Any failed request
//     ends the link on the runner's side, as a broken WebSocket does.
//
// A link ends as a whole: once Read or Write fails, the link is over and
// the protocol's rules for a lost connection apply (a request sent and not
// answered is outcome_unknown, never re-sent).
package runnerlink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/webcodex/webcodex/internal/runnerwire"
)

// Paths of the server's runner endpoints.
const (
	// WebSocketPath is the WebSocket endpoint.
	WebSocketPath = "/api/runner/ws"
	// PollPath is the prefix of the long-poll endpoints (open, recv,
	// send, close).
	PollPath = "/api/runner/poll/"
)

// Type is a message's type.
type Type int

// Message types.
const (
	Text   Type = 1 // a JSON frame (runnerwire.Encode)
	Binary Type = 2 // a binary message (runnerwire.EncodeBinary)
)

// A Link carries messages between the server and a runner, in order.
// Read and Write may be called concurrently with each other and Write
// with itself; each Write is one whole message.
type Link interface {
	// Read returns the next message. It fails when the link has ended
	// or ctx ends (which may end the link: callers treat any error as its
	// end).
	Read(ctx context.Context) (Type, []byte, error)
	// Write sends one message of at most runnerwire.MaxFrameBytes. It
	// returns once the message is on its way (written to the socket, or
	// queued for the next exchange); an error ends the link. ErrClosed
	// means the link had ended before it took the message: nothing of it
	// was sent.
	Write(ctx context.Context, t Type, b []byte) error
	// Close ends the link. With a reason, the messages already written
	// still reach the peer (the WebSocket closes with a handshake naming
	// it); without, it ends at once.
	Close(reason string)
}

// Transport names a way to carry a link.
type Transport string

// Transports. Auto is the runner's choice: a WebSocket, falling back to
// long-poll when the upgrade is refused in the way a proxy refuses it
// (UpgradeRefused).
const (
	Auto      Transport = "auto"
	WebSocket Transport = "websocket"
	LongPoll  Transport = "longpoll"
)

// ParseTransport checks a transport's name.
func ParseTransport(s string) (Transport, error) {
	switch t := Transport(s); t {
	case Auto, WebSocket, LongPoll:
		return t, nil
	}
	return "", fmt.Errorf("unknown transport %q: use auto, websocket or longpoll", s)
}

// ErrClosed is the error of a link that has ended.
var ErrClosed = errors.New("runnerlink: the link has ended")

// ErrTooLarge refuses a message over runnerwire.MaxFrameBytes.
var ErrTooLarge = fmt.Errorf("runnerlink: a message is over the %d-byte bound", runnerwire.MaxFrameBytes)

// An HTTPError is an HTTP answer that refused a link: the server's (a bad
// token: 401; a hello storm: 429) or a proxy's. Status 101 with an invalid
// handshake counts as refused too.
type HTTPError struct {
	Transport Transport
	Status    int
	Header    http.Header // the answer's (Retry-After, WWW-Authenticate)
	Err       error
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("the %s link was refused with HTTP %d: %v", e.Transport, e.Status, e.Err)
}

func (e *HTTPError) Unwrap() error { return e.Err }

// UpgradeRefused reports whether err is a WebSocket upgrade answered by
// something that does not carry WebSockets on that path — the way a proxy
// that breaks WebSockets answers: an HTTP status that is not 101 (or a 101
// with an invalid handshake), other than 401 and 403 (the token), 429 (the
// rate limit) and 500, 502, 503, 504 (a server or upstream that is down: a
// long-poll would fail the same way). A failure with no HTTP answer at all
// (refused connection, timeout) is no refusal.
func UpgradeRefused(err error) bool {
	var he *HTTPError
	if !errors.As(err, &he) || he.Transport != WebSocket {
		return false
	}
	switch he.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return false
	}
	return true
}

// Dial opens a link to the server at base (http:// or https://) over t
// (WebSocket or LongPoll), authenticating with the runner token, and sends
// hello as its first message. ctx bounds the opening only. An HTTP answer
// that refuses the link is an *HTTPError.
func Dial(ctx context.Context, t Transport, base, token string, hello []byte) (Link, error) {
	if len(hello) > runnerwire.MaxFrameBytes {
		return nil, ErrTooLarge
	}
	switch t {
	case WebSocket:
		return dialWebSocket(ctx, base, token, hello)
	case LongPoll:
		return dialPoll(ctx, base, token, hello)
	}
	return nil, fmt.Errorf("runnerlink: cannot dial over %q", t)
}

func dialWebSocket(ctx context.Context, base, token string, hello []byte) (Link, error) {
	u := strings.TrimRight(base, "/")
	switch {
	case strings.HasPrefix(u, "https://"):
		u = "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		u = "ws://" + strings.TrimPrefix(u, "http://")
	}
	ws, resp, err := websocket.Dial(ctx, u+WebSocketPath, &websocket.DialOptions{
		HTTPHeader:   http.Header{"Authorization": []string{"Bearer " + token}},
		Subprotocols: []string{runnerwire.Subprotocol},
	})
	if err != nil {
		if resp != nil {
			return nil, &HTTPError{Transport: WebSocket, Status: resp.StatusCode, Header: resp.Header, Err: err}
		}
		return nil, err
	}
	l := wsLink{ws}
	ws.SetReadLimit(runnerwire.MaxFrameBytes)
	if err := l.Write(ctx, Text, hello); err != nil {
		ws.CloseNow()
		return nil, err
	}
	return l, nil
}

// Accept upgrades a request to the WebSocket endpoint (already
// authenticated) to a link. When it fails, the request has been answered.
func Accept(w http.ResponseWriter, r *http.Request) (Link, error) {
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{runnerwire.Subprotocol}})
	if err != nil {
		return nil, err
	}
	if ws.Subprotocol() != runnerwire.Subprotocol {
		ws.Close(websocket.StatusPolicyViolation, "the subprotocol "+runnerwire.Subprotocol+" is required")
		return nil, errors.New("runnerlink: the runner did not speak " + runnerwire.Subprotocol)
	}
	ws.SetReadLimit(runnerwire.MaxFrameBytes)
	return wsLink{ws}, nil
}

// wsLink is a Link over one WebSocket. A message over the read limit
// closes it with 1009.
type wsLink struct{ ws *websocket.Conn }

func (l wsLink) Read(ctx context.Context) (Type, []byte, error) {
	typ, b, err := l.ws.Read(ctx)
	if err != nil {
		return 0, nil, err
	}
	if typ == websocket.MessageBinary {
		return Binary, b, nil
	}
	return Text, b, nil
}

func (l wsLink) Write(ctx context.Context, t Type, b []byte) error {
	if len(b) > runnerwire.MaxFrameBytes {
		return ErrTooLarge
	}
	typ := websocket.MessageText
	if t == Binary {
		typ = websocket.MessageBinary
	}
	return l.ws.Write(ctx, typ, b)
}

func (l wsLink) Close(reason string) {
	if reason == "" {
		l.ws.CloseNow()
		return
	}
	l.ws.Close(websocket.StatusPolicyViolation, reason)
}
