package runnerhub

import (
	"net/http"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runnerlink"
)

// authenticate checks the runner token of r, and takes one hello attempt
// of it when hello is set. When it fails (status is then not 0) it has
// answered r with that status; raw is the token given, if any.
func (h *Hub) authenticate(w http.ResponseWriter, r *http.Request, hello bool) (tok auth.Token, raw string, status int) {
	raw, ok := auth.ParseBearer(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="webcodex-runner"`)
		http.Error(w, "a runner token is required", http.StatusUnauthorized)
		return tok, "", http.StatusUnauthorized
	}
	if hello && !h.allow(auth.HashToken(raw)) {
		w.Header().Set("Retry-After", "2")
		http.Error(w, "too many connection attempts for this token", http.StatusTooManyRequests)
		return tok, raw, http.StatusTooManyRequests
	}
	tok, err := h.o.Auth.AuthenticateRunner(r.Context(), raw)
	if err != nil {
		if failure.Is(err, failure.Unauthenticated) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="webcodex-runner", error="invalid_token"`)
			http.Error(w, failure.MessageOf(err), http.StatusUnauthorized)
			return tok, raw, http.StatusUnauthorized
		}
		http.Error(w, "the credential store is unavailable", http.StatusServiceUnavailable)
		return tok, raw, http.StatusServiceUnavailable
	}
	return tok, raw, 0
}

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
