package kernel_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// jsonOutbox is an Outbox that encodes the kernel's record as JSON, as
// the app's does with the journal's record.
type jsonOutbox struct{}

func (jsonOutbox) Encode(r kernel.Record) ([]byte, error) { return json.Marshal(r) }
func (jsonOutbox) Stored()                                {}

// BenchmarkMutatingCallOverhead measures what the kernel adds to a
// mutating tool that does nothing, recorded in a Workflow Session whose
// ledger is on tmpfs (/dev/shm, where fsync returns at once): decoding,
// claims (one header read), the durable tool_call_started, the
// tool_call_finished with its evidence outbox row, the result body and
// digests, alternated with calling the same handler directly. The
// subject's median is the overhead apart from fsyncs; the goal is 0.2 ms.
func BenchmarkMutatingCallOverhead(b *testing.B) {
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		b.Skip("no /dev/shm")
	}
	dir, err := os.MkdirTemp("/dev/shm", "wcbench-kernel-")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	st, err := workflowdb.Open(context.Background(), filepath.Join(dir, "workflow.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	svc := workflow.NewService(st, nil)
	reg := kernel.NewRegistry()
	sessions.Register(reg, &sessions.Tools{Sessions: svc})
	handler := func(_ context.Context, inv *kernel.Invocation, in echoIn) (echoOut, error) {
		inv.Change("out.txt")
		return echoOut{Text: in.Text}, nil
	}
	kernel.Register(reg, kernel.Spec[echoIn, echoOut]{
		Name: "noop_write", Description: "a mutating tool that does nothing", Scopes: []auth.Scope{auth.ScopeProjectWrite},
		Mutates: true, Writes: true, Session: kernel.SessionOptional, Handler: handler,
	})
	k := kernel.New(kernel.Options{Registry: reg, Projects: projects{projA: {ID: projA, Name: "a", Root: dir}},
		Sessions: svc, Outbox: jsonOutbox{}})
	ctx := context.Background()
	call := func(tool, args, recorder string) kernel.Result {
		res := k.Dispatch(ctx, kernel.Call{Tool: tool, Arguments: json.RawMessage(args), RecordingSessionID: recorder, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
		if !res.Success {
			b.Fatalf("%s: %+v", tool, res.Error)
		}
		return res
	}
	id := call("work_on_project", `{"project":"`+projA+`","instruction":"measure the kernel"}`, "").Output.(sessions.WorkOutput).SessionID
	args := `{"project":"` + projA + `","text":"x"}`
	inv := &kernel.Invocation{ID: "inv_direct", Tool: "noop_write"}
	benchpair.Run(b, "handler", func() {
		var in echoIn
		json.Unmarshal([]byte(args), &in)
		handler(ctx, inv, in)
	}, "kernel_recorded", func() { call("noop_write", args, id) })
}
