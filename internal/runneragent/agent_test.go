package runneragent

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coder/websocket"

	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runnerwire"
	"github.com/webcodex/webcodex/internal/workspace"
)

// TestRequestsInFlightAreBounded: a server that sends more than
// MaxInflight requests at once gets too_many_requests for the one over the
// bound, while the others wait for their operation.
func TestRequestsInFlightAreBounded(t *testing.T) {
	release := make(chan struct{})
	block := workspace.NewOp("test.block", func(ctx context.Context, _ workspace.Env, _ project.Project, _ struct{}) (struct{}, error) {
		<-release
		return struct{}{}, nil
	})
	cfg, err := ParseConfig([]byte(fmt.Sprintf("client_id = \"box\"\n[projects]\ndemo = %q\n", t.TempDir())), "/")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan runnerwire.Response, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{runnerwire.Subprotocol}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ws.SetReadLimit(runnerwire.MaxFrameBytes)
		ctx := r.Context()
		if _, _, err := ws.Read(ctx); err != nil { // the hello
			return
		}
		welcome, _ := runnerwire.Encode(runnerwire.KindWelcome, 1, "", runnerwire.Welcome{Major: runnerwire.Major, HeartbeatSeconds: 3600})
		ws.Write(ctx, websocket.MessageText, welcome)
		for i := range runnerwire.MaxInflight + 1 {
			req, _ := runnerwire.Encode(runnerwire.KindRequest, 1, fmt.Sprintf("rq_%d", i), runnerwire.Request{Op: "test.block", Project: "demo", Args: []byte(`{}`)})
			if ws.Write(ctx, websocket.MessageText, req) != nil {
				return
			}
		}
		for {
			typ, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			if typ != websocket.MessageText {
				continue
			}
			if f, err := runnerwire.Decode(b); err == nil && f.Kind == runnerwire.KindResponse {
				var res runnerwire.Response
				runnerwire.DecodeBody(f, &res)
				if f.ID != fmt.Sprintf("rq_%d", runnerwire.MaxInflight) {
					res.Error = &runnerwire.Error{Kind: "wrong request " + f.ID}
				}
				got <- res
				<-ctx.Done()
				return
			}
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	a := New(Options{Config: cfg, Servers: []string{srv.URL}, Token: "t", Ops: []workspace.Served{block}})
	go func() { done <- a.Run(ctx) }()
	res := <-got
	if res.Error == nil || res.Error.Kind != "too_many_requests" {
		t.Fatalf("request %d: %+v", runnerwire.MaxInflight+1, res.Error)
	}
	close(release)
	cancel()
	<-done
}
