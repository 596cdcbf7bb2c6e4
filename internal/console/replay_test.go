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
// replays of the same message, and three identical completions one
// completion and two labelled replays of it.
func TestTimelineLabelsReplays(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	sid := s.startSession(t, tok, "replay session")
	post := map[string]any{"session_id": sid, "kind": "todo", "message": "rebase on main", "delivery_key": "n-1"}
	var todo string
	for i := 0; i < 3; i++ {
		out := s.call(t, tok, "post_session_message", post)
		var m struct {
			ID string `json:"message_id"`
		}
		if err := json.Unmarshal(out["message"], &m); err != nil || m.ID == "" {
			t.Fatalf("post %d: %s", i, out["message"])
		}
		todo = m.ID
	}
	var fence string
	json.Unmarshal(s.call(t, tok, "get_session_assignment", map[string]any{"session_id": sid, "message_id": todo})["assignment_fence"], &fence)
	complete := map[string]any{"session_id": sid, "message_id": todo, "answer": "rebased", "completion_key": "c-1", "expected_assignment_fence": fence}
	var completion string
	for i := 0; i < 3; i++ {
		var c struct {
			CompletionID string `json:"completion_id"`
		}
		if err := json.Unmarshal(s.call(t, tok, "complete_session_message", complete)["todo"], &c); err != nil || c.CompletionID == "" {
			t.Fatalf("completion %d: %v", i, err)
		}
		completion = c.CompletionID
	}
	b := s.browser(t)
	b.login(tok)
	p := b.get("/console/sessions/" + sid + "/timeline")
	if p.status != http.StatusOK {
		t.Fatalf("timeline: %d", p.status)
	}
	for tool, original := range map[string]string{"post_session_message": todo, "complete_session_message": completion} {
		var calls, replays int
		for _, row := range timelineRowRE.FindAllString(p.body, -1) {
			if !strings.Contains(row, "<strong>"+tool+"</strong>") {
				continue
			}
			calls++
			if strings.Contains(row, "replay, no new effect") {
				replays++
				if !strings.Contains(row, "of <code>"+original+"</code>") {
					t.Errorf("a %s replay row does not name the original %s: %s", tool, original, row)
				}
			}
		}
		if calls != 3 || replays != 2 {
			t.Fatalf("timeline shows %d %s rows, %d labelled replays; want 3 and 2:\n%s", calls, tool, replays, p.body)
		}
	}
}
