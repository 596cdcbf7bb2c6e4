package kernel

import (
	"fmt"
	"sort"
)

// Registry holds the registered tools. It is filled at start-up and read-only
// afterwards.
type Registry struct {
	tools map[string]*Tool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]*Tool{}} }

func (r *Registry) add(t *Tool) {
	if _, dup := r.tools[t.Name]; dup {
		panic(fmt.Sprintf("kernel: tool %s registered twice", t.Name))
	}
	r.tools[t.Name] = t
}

// Lookup returns the tool named name.
func (r *Registry) Lookup(name string) (*Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// Tools returns every tool sorted by name; the order is deterministic.
func (r *Registry) Tools() []*Tool {
	out := make([]*Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
