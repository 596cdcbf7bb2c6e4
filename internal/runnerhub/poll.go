package runnerhub

import (
	"net/http"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/runnerlink"
)

// ServePoll is the long-poll runner endpoint (runnerlink.PollPath, for
// runners behind proxies that break WebSockets). Every request
// authenticates the runner token as the WebSocket endpoint does; an open
// takes one hello attempt of the same rate limit and its hello is served
// exactly as one over a WebSocket (the same admission, generation,
// heartbeats and end). A request whose token is refused ends the link it
// names; a link nobody polls for MissedHeartbeats heartbeat intervals
// ends as a silent WebSocket does.
func (h *Hub) ServePoll(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "the long-poll endpoint takes POST", http.StatusMethodNotAllowed)
		return
	}
	open := r.URL.Path == runnerlink.PollPath+"open"
	tok, raw, status := h.authenticate(w, r, open)
	if status == http.StatusUnauthorized && raw != "" && !open {
		h.poll.Refused(r, auth.HashToken(raw))
	}
	if status != 0 {
		return
	}
	if open {
		h.poll.Open(w, r, auth.HashToken(raw), func(l runnerlink.Link) { h.serve(l, tok, raw) })
		return
	}
	h.poll.Serve(w, r, auth.HashToken(raw))
}

// EndLongPolls ends every long-poll link and refuses new ones: call it
// when the HTTP server starts shutting down, which waits for held receives
// (and after which no request of a link could arrive). Their connections
// end as lost ones do: requests in flight on them are outcome_unknown.
func (h *Hub) EndLongPolls() { h.poll.Close() }
