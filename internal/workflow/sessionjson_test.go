package workflow_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
)

// fill sets every exported field of v (recursively) from the given
// values; a field of a kind it does not know fails the test, so a field
// added to workflow.Session cannot be left out of Session.AppendJSON
// unnoticed.
func fill(t *testing.T, v reflect.Value, path, str string, n int64, tm time.Time, list []string) {
	t.Helper()
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(tm))
		return
	case v.Type() == reflect.TypeFor[*time.Time]():
		v.Set(reflect.ValueOf(&tm))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(str + path)
	case reflect.Int64:
		v.SetInt(n + int64(len(path)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			t.Fatalf("%s: slice of %s: teach Session.AppendJSON and this test", path, v.Type().Elem())
		}
		v.Set(reflect.ValueOf(list).Convert(v.Type()))
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.IsExported() {
				fill(t, v.Field(i), path+"."+f.Name, str, n, tm, list)
			}
		}
	default:
		t.Fatalf("%s: kind %s: teach Session.AppendJSON and this test", path, v.Kind())
	}
}

func checkSessionJSON(t *testing.T, s workflow.Session) {
	t.Helper()
	want, err := json.Marshal(s)
	got, ok := s.AppendJSON(nil)
	if ok != (err == nil) {
		t.Fatalf("AppendJSON ok=%v, json.Marshal err=%v (%+v)", ok, err, s)
	}
	if ok && !bytes.Equal(got, want) {
		t.Fatalf("AppendJSON differs from json.Marshal:\n got %s\nwant %s", got, want)
	}
}

// TestSessionAppendJSONIsMarshal holds Session.AppendJSON byte for byte
// equal to json.Marshal of the session, with every field set,
// with optional members absent, and with strings and times at the edges
// of JSON's escaping and RFC 3339's range.
func TestSessionAppendJSONIsMarshal(t *testing.T) {
	zone := time.FixedZone("x", 5*3600+30*60)
	strs := []string{"", "wc_sess_abc", `quote " backslash \ slash /`, "<script>&amp;</script>",
		"\x00\x01\b\f\n\r\t\x1f\x7f", "caf\u00e9 \u2028 \u2029 \U0001F600", "bad \xff\xfe utf8 \xe2\x80", "\xe2\x80\xa8"}
	times := []time.Time{{}, time.Date(2026, 12, 1, 18, 0, 0, 123456789, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 0, zone), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)}
	for _, str := range strs {
		for _, tm := range times {
			for _, list := range [][]string{nil, {}, {str}, {"job_1", str, "job_2"}} {
				var s workflow.Session
				fill(t, reflect.ValueOf(&s).Elem(), "", str, 42, tm, list)
				checkSessionJSON(t, s)
			}
		}
	}
	// Optional members absent, and the zero session.
	checkSessionJSON(t, workflow.Session{})
	checkSessionJSON(t, workflow.Session{ID: "wc_sess_x", ExecutionContext: workflow.ExecutionContext{DefaultShell: workflow.ShellBash}})
	checkSessionJSON(t, workflow.Session{ExecutionContext: workflow.ExecutionContext{DefaultCwd: "src"}})
	// Times json.Marshal refuses.
	for _, tm := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 24*3600)), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("sec", 3600+7))} {
		checkSessionJSON(t, workflow.Session{CreatedAt: tm})
		checkSessionJSON(t, workflow.Session{UpdatedAt: tm})
		checkSessionJSON(t, workflow.Session{ClosedAt: &tm})
	}
}

// FuzzSessionAppendJSON compares Session.AppendJSON with json.Marshal on
// arbitrary strings, counters and times.
func FuzzSessionAppendJSON(f *testing.F) {
	f.Add("t\u2028<&>\xff", "wc_sess_1", int64(7), int64(1764612000), int64(5), 3600, true, "a,b\x00")
	f.Add("", "", int64(-1), int64(-62135596800), int64(0), 0, false, "")
	f.Add("x", "y", int64(1<<62), int64(253402300800), int64(999999999), -86399, true, ",")
	f.Fuzz(func(t *testing.T, title, id string, n, sec, nsec int64, offset int, closed bool, markers string) {
		tm := time.Unix(sec, nsec).In(time.FixedZone("z", offset))
		s := workflow.Session{ID: id, Project: id + title, Title: title, Mode: workflow.Mode(title), Lifecycle: workflow.Lifecycle(id),
			OwnerFingerprint: title, ExecutionContext: workflow.ExecutionContext{DefaultCwd: title, DefaultShell: workflow.Shell(id)},
			CreatedAt: tm, UpdatedAt: tm.Add(time.Duration(n)), EventsObserved: n, RetentionTruncated: closed,
			Counters: workflow.Counters{ToolCalls: n, ToolFailures: -n, Instructions: sec, GuardDenials: nsec, Replays: n / 2}}
		if closed {
			s.ClosedAt = &tm
		}
		if markers != "" {
			s.JobMarkers = strings.Split(markers, ",")
		}
		checkSessionJSON(t, s)
	})
}

// FuzzAppendJSONStringsIsMarshal compares AppendJSONStrings with
// json.Marshal on lists of arbitrary strings.
func FuzzAppendJSONStringsIsMarshal(f *testing.F) {
	f.Add("a.go\x00b <&> \u2028.go\x00\xff\xfe", 0)
	f.Add("", 1)
	f.Add("x", 0)
	f.Fuzz(func(t *testing.T, joined string, empty int) {
		ss := strings.Split(joined, "\x00")
		if empty%2 == 1 {
			ss = []string{}
		}
		want, err := json.Marshal(ss)
		if err != nil {
			t.Fatal(err)
		}
		if got := workflow.AppendJSONStrings([]byte("prefix"), ss); string(got) != "prefix"+string(want) {
			t.Fatalf("AppendJSONStrings(%q) = %s, json.Marshal = %s", ss, got, want)
		}
	})
}
