package mcpprovider

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"github.com/webcodex/webcodex/internal/project"
)

// Statuses and reasons of a catalog entry.
const (
	StatusReady       = "ready"
	StatusUnavailable = "unavailable"
	// ReasonCwdNotRoot: the provider starts elsewhere than the project
	// root, so the spec's "cwd matches the Project root" rule leaves it out.
	ReasonCwdNotRoot = "cwd_not_project_root"
	// ReasonNotListed: no instance for this project has answered list
	// yet (providers start on demand, never to fill a catalog).
	ReasonNotListed = "not_listed"
)

// Catalog is the plugins part of an extension catalog for one project:
// selection metadata only (no schemas, commands, environments or paths).
type Catalog struct {
	// Status is StatusAvailable: the catalog was read (it may list no
	// provider).
	Status  string   `json:"status"`
	Plugins []Plugin `json:"plugins"`
}

// StatusAvailable is the status of a served catalog.
const StatusAvailable = "available"

// Plugin is one provider's selection metadata.
type Plugin struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Tools and Revision (a digest of the listed tools' revisions) are
	// set when ready.
	Tools    int    `json:"tools,omitempty"`
	Revision string `json:"revision,omitempty"`
}

// Catalog lists the providers configured for p: ready when its cwd is
// p's root and its running instance answered list, unavailable with the
// reason otherwise. It starts nothing.
func (m *Manager) Catalog(p project.Project) Catalog {
	c := Catalog{Status: StatusAvailable, Plugins: []Plugin{}}
	root := filepath.Clean(p.Root)
	for _, name := range m.Names() {
		pv := m.opt.Providers[name]
		if pv.Cwd != "" && !inside(pv.Cwd, root) {
			continue // serves another project
		}
		e := Plugin{Name: name, Status: StatusUnavailable}
		switch {
		case pv.Cwd != "" && filepath.Clean(pv.Cwd) != root:
			e.Reason = ReasonCwdNotRoot
		default:
			e.Tools, e.Revision = m.listed(slotKey{name, root})
			if e.Revision == "" {
				e.Reason = ReasonNotListed
			} else {
				e.Status = StatusReady
			}
		}
		c.Plugins = append(c.Plugins, e)
	}
	return c
}

// listed is the tool count and list revision of k's running instance
// when it answered list ("" otherwise).
func (m *Manager) listed(k slotKey) (int, string) {
	in, ok := m.pool.Get(k)
	if !ok {
		return 0, ""
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.listed || in.tools == nil {
		return 0, ""
	}
	h := sha256.New()
	for _, t := range in.tools {
		h.Write([]byte(Revision(t)))
	}
	return len(in.tools), "sha256:" + hex.EncodeToString(h.Sum(nil)[:16])
}
