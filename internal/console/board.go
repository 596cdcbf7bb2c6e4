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

// The tools the console's board forms call: a post (guidance, a todo, an
// answer to a question) and a resolution.
const (
	PostTool    = "post_session_message"
	ResolveTool = "resolve_session_message"
)

// OperatorTag is the tag every console post carries, so that readers of
// the board see it came from a person in the console; the call itself is
// recorded with source console and the person's principal.
const OperatorTag = "operator"

// ClientName is the client name the console's calls are recorded
// with.
const ClientName = "webcodex-console"

// dispatch calls tool with args through the kernel as the signed-in
// person: the viewer's principal and source console, so the call passes
// the API's scope, authority and lifecycle checks and is recorded in the
// ledger and the evidence journal like any call. A refusal is returned as
// the tool's own error kind and message.
func (s *Server) dispatch(r *http.Request, tool string, args map[string]any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return failure.Wrap(failure.Internal, err, "encode arguments")
	}
	res := s.opts.Kernel.Dispatch(r.Context(), kernel.Call{Tool: tool, Arguments: raw, Principal: viewerOf(r).Principal,
		Source: kernel.SourceConsole, UserAgent: r.UserAgent(), ClientName: ClientName})
	if !res.Success {
		if res.Error == nil {
			return failure.New(failure.Internal, "%s failed", tool)
		}
		return failure.New(res.Error.Kind, "%s", res.Error.Message)
	}
	return nil
}

// backToBoard sends the browser back to the session page's board, at
// message anchor when it is not "".
func backToBoard(w http.ResponseWriter, r *http.Request, session, anchor string) {
	if anchor == "" {
		anchor = "board"
	}
	http.Redirect(w, r, Prefix+"/sessions/"+url.PathEscape(session)+"#"+url.PathEscape(anchor), http.StatusSeeOther)
}

// postMessage posts guidance or a todo to the session's board as the
// signed-in person (a post_session_message call, see dispatch) tagged
// OperatorTag.
func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) error {
	sess, err := s.authorize(r.Context(), viewerOf(r).Principal, r.PathValue("id"))
	if err != nil {
		return err
	}
	kind := workflow.MessageKind(r.PostFormValue("kind"))
	if kind != workflow.MessageGuidance && kind != workflow.MessageTodo {
		return failure.New(failure.InvalidArguments, "kind must be guidance or todo")
	}
	args := map[string]any{
		"session_id": sess.ID, "kind": kind, "message": strings.TrimSpace(r.PostFormValue("message")), "tags": []string{OperatorTag},
		"requires_ack": r.PostFormValue("requires_ack") == "on",
	}
	if pr := r.PostFormValue("priority"); pr != "" {
		args["priority"] = pr
	}
	if rt := r.PostFormValue("reply_to"); rt != "" {
		args["reply_to"] = rt
	}
	if err := s.dispatch(r, PostTool, args); err != nil {
		return err
	}
	backToBoard(w, r, sess.ID, "")
	return nil
}

// answerQuestion answers an open question of the session's board as the
// signed-in person: one post_session_message call of kind answer replying
// to it, tagged OperatorTag (see dispatch). It does not resolve the
// question (decision 0052): resolving is its own act, resolveMessage.
// Only an open, retained question is answered here; anything else is
// refused before any call.
func (s *Server) answerQuestion(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	sess, err := s.authorize(ctx, viewerOf(r).Principal, r.PathValue("id"))
	if err != nil {
		return err
	}
	id := r.PathValue("msg")
	if s.opts.Board == nil {
		return failure.New(failure.Unavailable, "the board is not configured on this server")
	}
	ms, _, err := s.opts.Board.List(ctx, sess.ID, workflow.MessageFilter{MessageID: id, Limit: 1})
	if err != nil {
		return err
	}
	if len(ms) == 0 || ms[0].Kind != workflow.MessageQuestion || ms[0].Status != workflow.MessageOpen {
		return failure.New(failure.InvalidArguments, "%s is not an open question of this session", id)
	}
	args := map[string]any{"session_id": sess.ID, "kind": workflow.MessageAnswer, "reply_to": id,
		"message": strings.TrimSpace(r.PostFormValue("message")), "tags": []string{OperatorTag}}
	if err := s.dispatch(r, PostTool, args); err != nil {
		return err
	}
	backToBoard(w, r, sess.ID, id)
	return nil
}

// resolveMessage resolves a message of the session's board as the
// signed-in person, with the form's optional resolution note: one
// resolve_session_message call (see dispatch). Like the tool, a message
// already resolved keeps its first resolution.
func (s *Server) resolveMessage(w http.ResponseWriter, r *http.Request) error {
	sess, err := s.authorize(r.Context(), viewerOf(r).Principal, r.PathValue("id"))
	if err != nil {
		return err
	}
	id := r.PathValue("msg")
	args := map[string]any{"session_id": sess.ID, "message_id": id}
	if note := strings.TrimSpace(r.PostFormValue("resolution")); note != "" {
		args["resolution"] = note
	}
	if err := s.dispatch(r, ResolveTool, args); err != nil {
		return err
	}
	backToBoard(w, r, sess.ID, id)
	return nil
}
