package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
)

// PostTool is the tool the console posts the operator's messages with.
const PostTool = "post_session_message"

// OperatorTag is the tag every console post carries, so that readers of
// the board see it came from a person in the console; the call itself is
// recorded with source console and the person's principal.
const OperatorTag = "operator"

// postKinds are the kinds the console's form offers.
var postKinds = []workflow.MessageKind{workflow.MessageGuidance, workflow.MessageTodo}

// postMessage posts guidance or a todo to the session's board as the
// signed-in person: a post_session_message call dispatched through the
// kernel with the viewer's principal and source console, so it passes the
// API's scope, authority and lifecycle checks and is recorded in the
// ledger and the evidence journal like any call.
func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) error {
	ctx, p := r.Context(), viewerOf(r).Principal
	sess, err := s.authorize(ctx, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	kind := workflow.MessageKind(r.PostFormValue("kind"))
	if kind != workflow.MessageGuidance && kind != workflow.MessageTodo {
		return failure.New(failure.InvalidArguments, "kind must be guidance or todo")
	}
	body := strings.TrimSpace(r.PostFormValue("message"))
	args := map[string]any{
		"session_id": sess.ID, "kind": kind, "message": body, "tags": []string{OperatorTag},
		"requires_ack": r.PostFormValue("requires_ack") == "on",
	}
	if pr := r.PostFormValue("priority"); pr != "" {
		args["priority"] = pr
	}
	if rt := r.PostFormValue("reply_to"); rt != "" {
		args["reply_to"] = rt
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return failure.Wrap(failure.Internal, err, "encode arguments")
	}
	res := s.opts.Kernel.Dispatch(ctx, kernel.Call{Tool: PostTool, Arguments: raw, Principal: p, Source: kernel.SourceConsole,
		UserAgent: r.UserAgent(), ClientName: "webcodex-console"})
	if !res.Success {
		if res.Error == nil {
			return failure.New(failure.Internal, "post failed")
		}
		return failure.New(res.Error.Kind, "%s", res.Error.Message)
	}
	http.Redirect(w, r, Prefix+"/sessions/"+url.PathEscape(sess.ID)+"#board", http.StatusSeeOther)
	return nil
}
