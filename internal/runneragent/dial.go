package runneragent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/webcodex/webcodex/internal/runnerlink"
)

// dial opens a link to the server and sends hello on it. A refusal of the
// runner token is fatal (ErrFatal); a rate-limited attempt waits.
func (a *Agent) dial(ctx context.Context, hello []byte) (runnerlink.Link, error) {
	link, err := runnerlink.Dial(ctx, runnerlink.WebSocket, a.o.Server, a.o.Token, hello)
	if err != nil {
		return nil, refusal(err)
	}
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
