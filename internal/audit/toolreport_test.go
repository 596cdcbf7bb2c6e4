package audit

import (
	"reflect"
	"testing"
)

func TestBuildToolReport(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	var ms []ModelErgonomics
	// read_files: 20 calls, durations 1..20 ms, bytes 100..2000, 4 failures.
	for i := int64(1); i <= 20; i++ {
		m := ModelErgonomics{ToolName: "read_files", ToolCategory: "files", Success: i > 4, DurationMS: i, SerializedResultBytes: n(i * 100)}
		if i <= 4 {
			m.ErrorKind = map[int64]string{1: "not_found", 2: "not_found", 3: "permission_denied", 4: "invalid_arguments"}[i]
		}
		ms = append(ms, m)
	}
	ms = append(ms,
		ModelErgonomics{ToolName: "apply_text_edits", ToolCategory: "edit", DurationMS: 3, ErrorKind: "invalid_arguments"},
		ModelErgonomics{ToolName: "apply_text_edits", ToolCategory: "edit", DurationMS: 9, Success: true, SerializedResultBytes: n(50)},
		ModelErgonomics{ToolName: "zz", ToolCategory: "x", DurationMS: 1, Success: true, SerializedResultBytes: n(7)},
		ModelErgonomics{ToolName: "aa", ToolCategory: "x", DurationMS: 1, Success: true, SerializedResultBytes: n(7)},
	)
	got := BuildToolReport(ms)
	want := []ToolStats{
		{Tool: "read_files", Category: "files", Count: 20, Successes: 16, SuccessRate: 0.8, P50MS: 10, P95MS: 19, MeanBytes: 1050, P95Bytes: 1900,
			TopErrorKinds: []KindCount{{"not_found", 2}, {"invalid_arguments", 1}, {"permission_denied", 1}}},
		{Tool: "apply_text_edits", Category: "edit", Count: 2, Successes: 1, SuccessRate: 0.5, Rejected: 1, P50MS: 3, P95MS: 9, MeanBytes: 50, P95Bytes: 50,
			TopErrorKinds: []KindCount{{"invalid_arguments", 1}}},
		{Tool: "aa", Category: "x", Count: 1, Successes: 1, SuccessRate: 1, P50MS: 1, P95MS: 1, MeanBytes: 7, P95Bytes: 7, TopErrorKinds: []KindCount{}},
		{Tool: "zz", Category: "x", Count: 1, Successes: 1, SuccessRate: 1, P50MS: 1, P95MS: 1, MeanBytes: 7, P95Bytes: 7, TopErrorKinds: []KindCount{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("report:\n got %+v\nwant %+v", got, want)
	}
	if r := BuildToolReport(nil); len(r) != 0 {
		t.Fatalf("empty report: %+v", r)
	}
}
