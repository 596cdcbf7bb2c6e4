package kernel

import "github.com/webcodex/webcodex/internal/failure"

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
	for _, s := range tool.Scopes {
		if !c.Principal.Has(s) {
			return nil, failure.New(failure.InsufficientScope, "tool %s requires scope %s", tool.Name, s)
		}
	}
	return in, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
