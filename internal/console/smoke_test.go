package console_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestSmokePages(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	id := s.startSession(t, tok, "fix the parser")
	b := s.browser(t)
	b.login(tok)
	for _, p := range []string{"/console/", "/console/sessions", "/console/sessions/" + id, "/console/sessions/" + id + "/timeline", "/console/sessions/" + id + "/export"} {
		pg := b.get(p)
		if pg.status != http.StatusOK {
			t.Fatalf("%s: %d %s", p, pg.status, pg.body)
		}
		if !strings.Contains(pg.body, "fix the parser") && !strings.Contains(p, "bundle") && p != "/console/" {
			t.Errorf("%s lacks the instruction:\n%s", p, pg.body)
		}
	}
}
