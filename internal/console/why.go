package console

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// Bounds of a "why".
const (
	// WhyItems is how many items (tests, jobs, messages) one cause names;
	// it says how many more there are.
	WhyItems = 3
	// WhyItemChars bounds the text of one named item.
	WhyItemChars = 120
)

// why names what makes a session need a person or an agent, as lines for
// the attention page and the session page. The facts are the handoff
// brief's (b, handoff_brief exactly as the handoff tool projects it: its
// state and the counts that decide it, in its precedence order); why only
// names the items those counts count: the failing tests the brief lists,
// the session's active jobs (active, of the session's jobs), and its open
// risks, todos, questions and ACK-required messages (read from the
// board). An
// ACK-required message is named "unresolved, ACK required" until it is
// resolved: an ACK does not resolve it, so "waits for an ACK" would be
// false for one already ACKed. A count
// whose items cannot be read is still said, as a count.
func (s *Server) why(ctx context.Context, sess workflow.Session, b handoff.HandoffBrief, sessionJobs []jobs.Job) []string {
	var out []string
	at := b.Attention
	// Blocked: the brief's conditions, in its order.
	if at.WorkspaceConflict != nil && *at.WorkspaceConflict {
		out = append(out, "blocked: the workspace has merge conflicts")
	}
	if n := intOf(at.BlockingJobs) + intOf(at.RecoveringJobs); n > 0 {
		var names []string
		for _, j := range sessionJobs {
			if j.State == jobs.Running || j.State == jobs.Queued {
				names = append(names, string(j.State)+" "+jobLabel(j))
			}
		}
		out = append(out, "blocked: "+count(n, "job of this session is", "jobs of this session are")+" not finished"+items(names, n))
	}
	if b.Validation.Status == handoff.ValidationFailed {
		of := b.Validation.OpenFailures
		if of.Total > 0 {
			out = append(out, "blocked: validation failed; "+count(of.Total, "failing test", "failing tests")+" not yet proven passing"+items(of.Items, of.Total))
		} else {
			out = append(out, "blocked: the latest validation failed")
		}
	}
	if n := intOf(at.OpenRisks); n > 0 {
		out = append(out, "blocked: "+count(n, "open risk", "open risks")+s.messages(ctx, sess.ID, workflow.MessageRisk, false, n))
	}
	if b.Progress.State == handoff.StateNeedsValidation {
		c := b.Progress.Changes
		out = append(out, "needs validation: "+count(c.Total, "changed path", "changed paths")+" not validated since the change"+items(c.Items, c.Total))
	}
	if n := intOf(at.UnresolvedAckRequired); n > 0 {
		out = append(out, count(n, "message", "messages")+" unresolved, ACK required"+s.messages(ctx, sess.ID, "", true, n))
	}
	if n := intOf(at.OpenTodos); n > 0 {
		out = append(out, count(n, "open todo", "open todos")+s.messages(ctx, sess.ID, workflow.MessageTodo, false, n))
	}
	if n := intOf(at.OpenQuestions); n > 0 {
		out = append(out, count(n, "open question", "open questions")+s.messages(ctx, sess.ID, workflow.MessageQuestion, false, n))
	}
	return out
}

// messages names the first WhyItems open messages of session id of kind
// (any kind when ""; only those requiring an ACK when ack), of total, as
// items; "" when the board cannot be read.
func (s *Server) messages(ctx context.Context, id string, kind workflow.MessageKind, ack bool, total int) string {
	if s.opts.Board == nil {
		return ""
	}
	limit := WhyItems
	if ack {
		limit = workflow.MessageListMax
	}
	ms, _, err := s.opts.Board.List(ctx, id, workflow.MessageFilter{Kind: kind, Status: workflow.MessageOpen, Limit: limit})
	if err != nil {
		return ""
	}
	var names []string
	for _, m := range ms {
		if !ack || m.RequiresAck {
			names = append(names, "“"+strings.Join(strings.Fields(cut(m.Body, WhyItemChars)), " ")+"”")
		}
	}
	if len(names) == 0 {
		return ""
	}
	return items(names, total)
}

// jobLabel names a job: its id and its purpose, else its program.
func jobLabel(j jobs.Job) string {
	what := j.Purpose
	if what == "" {
		what = j.Program
	}
	return fmt.Sprintf("%s (%s)", j.ID, cut(what, WhyItemChars))
}

// items is ": a, b, c" for the first WhyItems of names, and "and N more"
// up to total; "" without names.
func items(names []string, total int) string {
	if len(names) == 0 {
		return ""
	}
	shown := make([]string, 0, WhyItems)
	for _, n := range names[:min(len(names), WhyItems)] {
		shown = append(shown, cut(n, WhyItemChars))
	}
	out := ": " + strings.Join(shown, ", ")
	if more := max(total, len(names)) - len(shown); more > 0 {
		out += " and " + strconv.Itoa(more) + " more"
	}
	return out
}

// count is "1 one" or "N many".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func intOf(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
