// Package runners registers list_runners: the `webcodex runner` processes
// of the caller's authority group and what they serve.
package runners

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runnerhub"
)

// Lister lists runners (runnerhub.Hub).
type Lister interface {
	List(ctx context.Context, owner string) ([]runnerhub.Info, error)
}

// Tools holds the hub the tool reads.
type Tools struct {
	Runners Lister
}

// Register adds list_runners to reg.
func Register(reg *kernel.Registry, t *Tools) {
	kernel.Register(reg, kernel.Spec[ListInput, ListOutput]{
		Name: "list_runners",
		Description: "List the `webcodex runner` processes of your authority group: connected or not, last seen, " +
			"version, sandbox, projects (ids for the project argument), SSH resource names and active processes.",
		Category: "runners", Scopes: []auth.Scope{auth.ScopeRuntimeRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.list,
	})
}

// ListInput is the input of list_runners.
type ListInput struct{}

// ListOutput is the output of list_runners.
type ListOutput struct {
	Runners []Runner `json:"runners" jsonschema:"the runners, ordered by client_id"`
}

// Runner is one runner as list_runners shows it.
type Runner struct {
	ClientID  string    `json:"client_id" jsonschema:"the runner's stable name"`
	Owner     string    `json:"owner" jsonschema:"the authority group of its token"`
	Connected bool      `json:"connected" jsonschema:"a connection is live now"`
	LastSeen  time.Time `json:"last_seen" jsonschema:"when the server last heard from it"`
	Version   string    `json:"version"`
	OS        string    `json:"os"`
	Arch      string    `json:"arch"`
	// Sandbox is the sandbox in force for its processes.
	Sandbox      string   `json:"sandbox" jsonschema:"the sandbox in force for its processes: workspace-write, read-only, off or unavailable"`
	Projects     []string `json:"projects" jsonschema:"project ids it serves (agent:<client_id>:<name>)"`
	Resources    []string `json:"resources" jsonschema:"names of its SSH resources"`
	Capabilities []string `json:"capabilities" jsonschema:"the operations it serves"`
	// ActiveProcesses counts the processes the server has running there.
	ActiveProcesses int    `json:"active_processes" jsonschema:"processes started through it that are still running"`
	Generation      uint64 `json:"generation" jsonschema:"the generation of its last connection"`
}

func (t *Tools) list(ctx context.Context, inv *kernel.Invocation, _ ListInput) (ListOutput, error) {
	if t.Runners == nil {
		return ListOutput{}, failure.New(failure.Unavailable, "runners are not available on this server")
	}
	infos, err := t.Runners.List(ctx, inv.Principal.Owner)
	if err != nil {
		return ListOutput{}, err
	}
	bound := inv.Principal.Project
	out := ListOutput{Runners: make([]Runner, 0, len(infos))}
	for _, i := range infos {
		r := Runner{ClientID: i.ClientID, Owner: i.Owner, Connected: i.Connected, LastSeen: i.LastSeen,
			Version: i.Hello.Version, OS: i.Hello.OS, Arch: i.Hello.Arch, Sandbox: i.Hello.Sandbox,
			Projects: make([]string, 0, len(i.Hello.Projects)), Resources: i.Hello.Resources,
			Capabilities: i.Hello.Capabilities, ActiveProcesses: i.ActiveProcesses, Generation: i.Generation}
		for _, name := range i.Hello.Projects {
			if id := project.RunnerID(i.ClientID, name); bound == "" || id == bound {
				r.Projects = append(r.Projects, id)
			}
		}
		if bound != "" && len(r.Projects) == 0 {
			continue // a principal bound to one project learns of no other runner
		}
		out.Runners = append(out.Runners, r)
	}
	return out, nil
}
