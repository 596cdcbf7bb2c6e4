package runneragent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/webcodex/webcodex/internal/runnerlink"
)

// dial opens a link to up over the configured transport and sends
// hello on it. Auto tries a WebSocket; when the upgrade is refused the way
// a proxy that breaks WebSockets refuses it (runnerlink.UpgradeRefused) it
// opens a long-poll link instead, and keeps to long-poll for the rest of
// this process for up (such a proxy refuses the next upgrade too; a restart
// tries the WebSocket again). A refusal of the runner token is fatal
// (ErrFatal); a rate-limited attempt waits.
func (a *Agent) dial(ctx context.Context, up *upstream, hello []byte) (runnerlink.Link, error) {
	t := a.o.Transport
	if t == "" {
		t = runnerlink.Auto
	}
	if t == runnerlink.Auto && up.polling.Load() {
		t = runnerlink.LongPoll
	}
	if t == runnerlink.Auto {
		link, err := runnerlink.Dial(ctx, runnerlink.WebSocket, up.url, a.o.Token, hello)
		if err == nil {
			a.o.Logger.Info("runner: link open", "server", up.url, "transport", runnerlink.WebSocket)
		}
		if !runnerlink.UpgradeRefused(err) {
			return link, refusal(err)
		}
		a.o.Logger.Warn("runner: the WebSocket upgrade was refused (a proxy that breaks WebSockets?); falling back to long-poll", "err", err)
		up.polling.Store(true)
		t = runnerlink.LongPoll
	}
	link, err := runnerlink.Dial(ctx, t, up.url, a.o.Token, hello)
	if err != nil {
		return nil, refusal(err)
	}
	a.o.Logger.Info("runner: link open", "server", up.url, "transport", t)
	return link, nil
}

// refusal turns the server's HTTP refusal of a link into the runner's
// reaction: stop on a refused token, wait on a rate limit.
func refusal(err error) error {
	var he *runnerlink.HTTPError
	if !errors.As(err, &he) {
		return err
	}
	switch he.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w: the server refused the runner token (HTTP %d): check --token", ErrFatal, he.Status)
	case http.StatusTooManyRequests:
		return &retryAfter{d: 2 * time.Second, msg: "the server rate-limited this token's connection attempts"}
	}
	return err
}
