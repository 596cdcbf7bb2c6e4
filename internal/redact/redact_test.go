package redact_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/redact"
)

func TestString(t *testing.T) {
	cases := []struct{ in, secret string }{
		{"Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "abcdefghijklmnopqrstuvwxyz012345"},
		{"token wc_pat_64q4QhLE_1fri2gEU3r8gCERFCsbTtE3SDtmcEqZNSc here", "wc_pat_64q4QhLE"},
		{"OPENAI_API_KEY=sk-proj-abcdefghijklmnop0123", "sk-proj-abcdefghijklmnop0123"},
		{"export GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz", "ghp_0123456789"},
		{`{"password": "correct horse battery"}`, "correct horse battery"},
		{"db password=hunter2hunter2 host=x", "hunter2hunter2"},
		{"client_secret: 'abc def'", "abc def"},
		{"aws AKIAABCDEFGHIJKLMNOP key", "AKIAABCDEFGHIJKLMNOP"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA"},
		{"slack xoxb-1234567890-abcdefghij", "xoxb-1234567890"},
	}
	for _, c := range cases {
		out := redact.String(c.in)
		if strings.Contains(out, c.secret) || !strings.Contains(out, redact.Marker) {
			t.Errorf("redact(%q) = %q still holds the secret", c.in, out)
		}
	}
}

func TestKeepsOrdinaryText(t *testing.T) {
	for _, s := range []string{
		"Fix the failing test in internal/kernel/kernel_test.go",
		"run `go test -race ./...` and check C:\\Users\\me and file:///tmp/x",
		"the token bucket refills every second",
		"set PASSWORD_MIN_LENGTH in the docs",
	} {
		if got := redact.String(s); got != s {
			t.Errorf("redact(%q) = %q, want unchanged", s, got)
		}
	}
}

func TestTruncate(t *testing.T) {
	s, cut := redact.Truncate("héllo wörld", 5)
	if s != "héllo" || !cut {
		t.Fatalf("got %q %v", s, cut)
	}
	if s, cut := redact.Truncate("abc", 3); s != "abc" || cut {
		t.Fatalf("got %q %v", s, cut)
	}
}

func FuzzPlantedSecretNeverSurvives(f *testing.F) {
	f.Add("before ", " after", "0123456789abcdefghij")
	f.Add("", "", "ZZZZZZZZZZZZZZZZZZZZZZZZ")
	f.Fuzz(func(t *testing.T, before, after, body string) {
		if len(body) < 20 || strings.ContainsAny(body, " \t\r\n\"',;&=:") || !utf8.ValidString(body) {
			return
		}
		for _, r := range body {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return
			}
		}
		secret := "wc_pat_" + body
		out := redact.String(before + secret + after)
		if strings.Contains(out, secret) {
			t.Fatalf("secret survived: %q", out)
		}
		out = redact.String(before + " password=" + body + " " + after)
		if strings.Contains(out, "password="+body) {
			t.Fatalf("password survived: %q", out)
		}
	})
}

func TestTrimIncompleteRune(t *testing.T) {
	euro := "€" // 3 bytes
	for _, c := range []struct{ in, want string }{
		{"", ""}, {"abc", "abc"}, {"a" + euro, "a" + euro},
		{"a" + euro[:1], "a"}, {"a" + euro[:2], "a"}, {"😀"[:3], ""}, {"\xff", "\xff"},
	} {
		if got := string(redact.TrimIncompleteRune([]byte(c.in))); got != c.want {
			t.Errorf("TrimIncompleteRune(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
