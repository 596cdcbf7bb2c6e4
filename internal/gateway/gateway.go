// Package gateway decides which tools a client is shown and lets it reach
// the rest (decision 0024).
//
// A [Profile] is the set of registered tools a transport lists (MCP
// tools/list): [Core] (the default: the coding loop), [Full] (every tool) or
// a named list. Every registered tool stays callable whatever the profile;
// a profile only changes what is listed. The gateway tools ([ListTools],
// [DescribeTool], [CallTool]) are listed in every profile; they are served
// by the transport, which dispatches a [CallTool] as a call of the named
// tool through the same kernel pipeline as a direct call (one kernel call,
// recorded under the real tool's name).
//
// The package reads the kernel's registry and imports no tool and no
// transport.
package gateway

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
)

// Profile names.
const (
	// Core lists the tools of the coding loop (CoreTools).
	Core = "core"
	// Full lists every registered tool.
	Full = "full"
	// Custom is the name of a profile given as a list of tools.
	Custom = "custom"
)

// The gateway tools, listed in every profile.
const (
	ListTools    = "list_tools"
	DescribeTool = "describe_tool"
	CallTool     = "call_tool"
)

// Names are the gateway tools' names.
var Names = []string{CallTool, DescribeTool, ListTools}

// CoreTools is the core profile: starting and resuming a task, files,
// search, edits, git, runs (run_shell; run_process, run_script and the
// persistent shells are reached through the gateway), background jobs,
// validation, handoff and closeout, and the message board's core (posting,
// listing, resolving, assignments, completion and observation). The rest
// (session administration, overview, cargo, validation_summary,
// session_discussion_summary) stay callable through the gateway.
var CoreTools = []string{
	"work_on_project",
	"read_files", "list_project_files", "search_project_texts",
	"apply_text_edits", "write_project_file",
	"git_status", "git_diff",
	"run_shell",
	"run_job", "observe_jobs", "read_job_tail", "stop_job",
	"go_test", "run_tests",
	"session_handoff_summary", "finish_coding_task",
	"post_session_message", "list_session_messages", "resolve_session_message",
	"get_session_assignment", "complete_session_message", "observe_session_messages",
}

// Profile is a resolved set of listed tools. The zero Profile lists every
// tool.
type Profile struct {
	name   string
	listed map[string]bool // nil: every tool
}

// UnknownToolError is the error of a profile that names a tool the registry
// does not hold.
type UnknownToolError struct{ Tool string }

func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("unknown tool %q", e.Tool)
}

// Resolve returns the profile name (Core or Full) or, when tools is not
// empty, the Custom profile listing exactly tools, checked against reg: a
// tool reg does not hold is an *UnknownToolError naming it (the first one),
// so that a misconfigured server does not start. name is ignored when
// tools is given; an empty name is Core. A gateway tool's name in tools is
// accepted (it is listed anyway).
func Resolve(reg *kernel.Registry, name string, tools []string) (Profile, error) {
	for _, n := range append([]string{Core, Full}, Names...) {
		if _, clash := reg.Lookup(n); clash {
			return Profile{}, fmt.Errorf("gateway: a registered tool is named %s", n)
		}
	}
	switch {
	case len(tools) > 0:
		name = Custom
	case name == "" || name == Core:
		name, tools = Core, CoreTools
	case name == Full:
		return Profile{name: Full}, nil
	default:
		return Profile{}, fmt.Errorf("unknown tool profile %q (core, full or a list of tools)", name)
	}
	listed := map[string]bool{}
	for _, t := range tools {
		if slices.Contains(Names, t) {
			continue
		}
		if _, ok := reg.Lookup(t); !ok {
			return Profile{}, &UnknownToolError{Tool: t}
		}
		listed[t] = true
	}
	return Profile{name: name, listed: listed}, nil
}

// ResolveList resolves a token's tool profile (auth.Token.Tools): one name
// Core or Full is that profile, any other list the Custom profile of
// exactly those tools (an *UnknownToolError names one reg lacks).
func ResolveList(reg *kernel.Registry, tools []string) (Profile, error) {
	if len(tools) == 1 && (tools[0] == Core || tools[0] == Full) {
		return Resolve(reg, tools[0], nil)
	}
	if len(tools) == 0 {
		return Profile{}, errors.New("an empty tool profile")
	}
	return Resolve(reg, "", tools)
}

// Name is the profile's name: core, full or custom.
func (p Profile) Name() string {
	if p.name == "" {
		return Full
	}
	return p.name
}

// Listed reports whether p lists the registered tool name.
func (p Profile) Listed(name string) bool { return p.listed == nil || p.listed[name] }

// Entry is one line of list_tools.
type Entry struct {
	Name string `json:"name"`
	// Summary is the first sentence of the tool's description.
	Summary string `json:"summary"`
	// Listed is true when tools/list shows the tool; an unlisted tool is
	// called through call_tool (or tools/call by name).
	Listed bool `json:"listed"`
}

// Catalog returns every registered tool p may call (it holds every scope
// the tool requires), sorted by name, with its one-line summary and whether
// profile lists it. The gateway tools are not in it.
func Catalog(reg *kernel.Registry, profile Profile, p auth.Principal) []Entry {
	var out []Entry
	for _, t := range reg.Tools() {
		if !Allowed(t, p) {
			continue
		}
		out = append(out, Entry{Name: t.Name, Summary: Summary(t.Description), Listed: profile.Listed(t.Name)})
	}
	return out
}

// Allowed reports whether p holds every scope t requires.
func Allowed(t *kernel.Tool, p auth.Principal) bool {
	for _, s := range t.Scopes {
		if !p.Has(s) {
			return false
		}
	}
	return true
}

// maxSummaryBytes bounds a catalog summary.
const maxSummaryBytes = 160

// Summary is the first sentence of a description (up to ". "), at most
// maxSummaryBytes bytes, cut at a rune boundary with "..." when longer.
func Summary(desc string) string {
	if i := strings.Index(desc, ". "); i >= 0 {
		desc = desc[:i+1]
	}
	if len(desc) <= maxSummaryBytes {
		return desc
	}
	cut := maxSummaryBytes - 3
	for cut > 0 && !utf8.RuneStart(desc[cut]) {
		cut--
	}
	return desc[:cut] + "..."
}
