package kernel

import (
	"strings"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
)

// admitCall checks that the tool is registered, decodes its arguments
// strictly and checks the caller's scopes.
func (k *Kernel) admitCall(c Call, tool *Tool) (any, error) {
	if tool == nil {
		return nil, failure.New(failure.UnknownTool, "no tool named %q", truncate(c.Tool, 64))
	}
	in, err := tool.decode(c.Arguments)
	if err != nil {
		return nil, err
	}
	if missing := c.Principal.Missing(tool.Scopes); len(missing) > 0 {
		return nil, scopeError(tool, missing)
	}
	return in, nil
}

// ScopeRefusal judges, before a call of the tool named name reaches
// Dispatch, whether p holds every scope the tool needs, so that an HTTP
// transport can refuse it with a step-up challenge (403
// insufficient_scope). When p lacks one, need is every scope the tool
// needs (a challenge names them all, not only the missing ones) and err is
// the failure.InsufficientScope Dispatch would refuse the call with. An
// unknown tool is not judged (nil, nil): Dispatch refuses it.
func (k *Kernel) ScopeRefusal(p auth.Principal, name string) (need []auth.Scope, err error) {
	tool, ok := k.reg.Lookup(name)
	if !ok {
		return nil, nil
	}
	missing := p.Missing(tool.Scopes)
	if len(missing) == 0 {
		return nil, nil
	}
	return tool.Scopes, scopeError(tool, missing)
}

// scopeError is the refusal of a call of tool by a principal that lacks
// the missing scopes.
func scopeError(tool *Tool, missing []auth.Scope) error {
	names := make([]string, len(missing))
	for i, s := range missing {
		names[i] = string(s)
	}
	word := "scope"
	if len(names) > 1 {
		word = "scopes"
	}
	return failure.New(failure.InsufficientScope, "tool %s requires %s %s", tool.Name, word, strings.Join(names, ", "))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
