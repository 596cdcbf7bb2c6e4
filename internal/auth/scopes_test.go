package auth

import (
	"slices"
	"testing"
)

// TestResourceScopes: the scopes offered for delegation are known scopes
// and never the operator's; the default grant is among them.
func TestResourceScopes(t *testing.T) {
	for _, s := range ResourceScopes {
		if !ValidScope(s) || s == ScopeAdmin || s == ScopeAccountManage {
			t.Errorf("scopes_supported offers %s", s)
		}
	}
	for _, s := range DefaultScopes {
		if !slices.Contains(ResourceScopes, s) {
			t.Errorf("default scope %s is not offered", s)
		}
	}
}

func TestMissing(t *testing.T) {
	p := Principal{Scopes: []Scope{ScopeProjectRead, ScopeMemoryRead}}
	if got := p.Missing([]Scope{ScopeProjectWrite, ScopeProjectRead, ScopeMemoryManage}); !slices.Equal(got, []Scope{ScopeProjectWrite, ScopeMemoryManage}) {
		t.Fatalf("missing: %v", got)
	}
	if got := p.Missing([]Scope{ScopeProjectRead}); got != nil {
		t.Fatalf("held: %v", got)
	}
	if got := LocalUser().Missing(AllScopes); got != nil {
		t.Fatalf("admin misses %v", got)
	}
}
