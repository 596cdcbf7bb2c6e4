package clientmeta_test

import (
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/oauth/clientmeta"
)

func TestIsClientIDURL(t *testing.T) {
	long := "https://a.example/" + strings.Repeat("p", clientmeta.MaxURL-len("https://a.example/"))
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"https://claude.ai/oauth/claude-code-client-metadata", true},
		{"https://chatgpt.com/oauth/abc/client.json", true},
		{"https://a.example:8443/client", true},
		{"https://a.example/client?v=1", true},
		{"https://127.0.0.1:9/c.json", true},
		{"https://[::1]:9/c.json", true},
		{"https://a.example/a/b/", true},
		{"https://a.example/..x/.y", true},
		{long, true},
		{long + "p", false},
		{"", false},
		{"http://a.example/client", false},
		{"HTTPS://a.example/client", false},
		{"ftp://a.example/client", false},
		{"a.example/client", false},
		{"https://a.example", false},
		{"https://a.example/", false},
		{"https://a.example?x=1", false},
		{"https://a.example/client#", false},
		{"https://a.example/client#x", false},
		{"https://user@a.example/client", false},
		{"https://user:pw@a.example/client", false},
		{"https:///client", false},
		{"https://:443/client", false},
		{"https://a.example/./client", false},
		{"https://a.example/a/../client", false},
		{"https://a.example/client/..", false},
		{"https://a.example/%2e%2e/client", false},
		{"https://a.example/%2E/client", false},
		{"https://a.example/cli ent", false},
		{"https://a.example/cli\tent", false},
		{"https://a.example/client\n", false},
		{"https://a.example/clïent", false},
		{"https://a.example/%zz", false},
	} {
		if got := clientmeta.IsClientIDURL(c.id); got != c.want {
			t.Errorf("IsClientIDURL(%q) = %v, want %v", c.id, got, c.want)
		}
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, c := range []struct {
		uris []string
		want bool
	}{
		{[]string{"http://localhost/callback", "http://127.0.0.1/callback", "http://[::1]:9/cb"}, true},
		{[]string{"http://localhost/callback", "https://claude.ai/api/mcp/auth_callback"}, false},
		{[]string{"https://localhost/callback"}, true},
		{[]string{"http://localhost.example/callback"}, false},
		{nil, false},
	} {
		if got := (clientmeta.Document{RedirectURIs: c.uris}).LoopbackOnly(); got != c.want {
			t.Errorf("LoopbackOnly(%q) = %v, want %v", c.uris, got, c.want)
		}
	}
}
