package app

import (
	"context"
	"sync"

	"github.com/webcodex/webcodex/internal/console/sse"
	"github.com/webcodex/webcodex/internal/console/verifyrun"
	"github.com/webcodex/webcodex/internal/evidence"
)

// consoleLive is what the console's live parts keep beyond one request
// (decision 0039): the limiter of its server-sent event streams and the
// background verifier of the evidence journal. Listen registers shutdown
// with the HTTP server, because Shutdown waits for handlers and a stream's
// handler ends only when told; Close ends a verifier run.
type consoleLive struct {
	mu      sync.Mutex
	streams *sse.Limiter
	verify  *verifyrun.Runner
}

// parts returns the limiter and the verifier (nil without a journal),
// made at the first call.
func (l *consoleLive) parts(a *App) (*sse.Limiter, *verifyrun.Runner) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streams == nil {
		l.streams = sse.NewLimiter(sse.PerSession, sse.MaxStreams)
		if a.Evidence != nil {
			cfg := a.Config
			l.verify = verifyrun.New(func(ctx context.Context, opts evidence.VerifyOptions) (evidence.Report, error) {
				return VerifyJournal(ctx, cfg, opts)
			}, nil)
		}
	}
	return l.streams, l.verify
}

// shutdown ends every open stream and waits (bounded) for their handlers
// to let go.
func (l *consoleLive) shutdown() {
	l.mu.Lock()
	streams := l.streams
	l.mu.Unlock()
	if streams == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sse.WriteTimeout)
	defer cancel()
	streams.Close(ctx)
}

// close ends the streams and a verifier run (waiting for it).
func (l *consoleLive) close() {
	l.shutdown()
	l.mu.Lock()
	verify := l.verify
	l.mu.Unlock()
	if verify != nil {
		verify.Close()
	}
}
