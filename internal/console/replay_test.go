package console_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// timelineRowRE matches one row of the timeline table.
var timelineRowRE = regexp.MustCompile(`(?s)<tr class="[^"]*">.*?</tr>`)

// The timeline labels each replayed call as a replay of its original, no
// new effect: three identical keyed posts are one post and two labelled
// replays of the same message.
func TestTimelineLabelsReplays(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	sid := s.startSession(t, tok, "replay session")
	post := map[string]any{"session_id": sid, "kind": "note", "message": "rebased on main", "delivery_key": "n-1"}
	var id string
	for i := 0; i < 3; i++ {
		out := s.call(t, tok, "post_session_message", post)
		var m struct {
			ID string `json:"message_id"`
		}
		if err := json.Unmarshal(out["message"], &m); err != nil || m.ID == "" {
			t.Fatalf("post %d: %s", i, out["message"])
		}
		id = m.ID
	}
	b := s.browser(t)
	b.login(tok)
	p := b.get("/console/sessions/" + sid + "/timeline")
	if p.status != http.StatusOK {
		t.Fatalf("timeline: %d", p.status)
	}
	var posts, replays int
	for _, row := range timelineRowRE.FindAllString(p.body, -1) {
		if !strings.Contains(row, "post_session_message") {
			continue
		}
		posts++
		if strings.Contains(row, "replay, no new effect") {
			replays++
			if !strings.Contains(row, "<code>"+id+"</code>") {
				t.Errorf("a replay row does not name the original %s: %s", id, row)
			}
		}
	}
	if posts != 3 || replays != 2 {
		t.Fatalf("timeline shows %d post rows, %d labelled replays; want 3 and 2:\n%s", posts, replays, p.body)
	}
}
