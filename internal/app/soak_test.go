package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/retention"
)

const (
	// soakDefaultDuration is how long the soak loads the server when
	// WEBCODEX_SOAK_DURATION is unset (issue 30: "a 10-minute soak").
	soakDefaultDuration = 10 * time.Minute
	// soakMinDuration is the shortest soak that can show a level: the
	// policy's age plus a purge interval plus a checkpoint interval must
	// fit in the first third of the run.
	soakMinDuration = 3 * time.Minute
	// soakUnit is the unit of the soak's retention policy (every key set
	// to 1): data is purged once about a minute old.
	soakUnit = time.Minute
	// soakPurgeInterval is the background purger's interval in the soak.
	soakPurgeInterval = 20 * time.Second
	// soakCallEvery paces the load: one tool call per tick, moderate on a
	// shared machine.
	soakCallEvery = 75 * time.Millisecond
	// soakSampleEvery is how often the data directory is measured.
	soakSampleEvery = 30 * time.Second
	// soakLevelBound bounds the largest size of the run's last third by
	// this multiple of the largest size of its middle third. A store that
	// grows linearly from empty gives 1.5 (its size at 3/3 of the run
	// over its size at 2/3); a store that levelled off gives about 1.0
	// plus its residual growth (what retention keeps forever, below).
	// 1.25 is halfway: it fails unbounded growth and passes a level.
	soakLevelBound = 1.25
	// soakEvidenceResidual bounds the evidence journal's growth per call
	// (one record each) over the run's last third: what a record keeps
	// forever once its payload is purged (its leaf row with the session
	// ids, their index entries and its tree nodes; decision 0091), plus
	// its share of the checkpoints, which are signed by time and so cost
	// more per record on a slower run. Measured: about 410 bytes. A
	// journal that kept its payloads, or whose purged pages were never
	// reused, grows by 1.6 KB or more.
	soakEvidenceResidual = 768
	// soakOutputLines is how many lines each soak job prints (about 20
	// KB of job output).
	soakOutputLines = 4000
)

// soakSample is one measurement of the data directory.
type soakSample struct {
	at     time.Duration
	calls  int
	total  int64
	stores map[string]int64
}

// TestRetentionSoak loads the real server for WEBCODEX_SOAK_DURATION
// (default soakDefaultDuration) with a retention policy in minutes
// (app.ShortenRetention: every key 1 soakUnit, purge every
// soakPurgeInterval) and shows that the data directory's size levels
// off: sessions opened, read and written in, jobs with output, sessions
// closed, each call audited and journaled as evidence. It runs only with
// WEBCODEX_SOAK=1 (CI runs it as its own step).
//
// What cannot shrink, and so bounds what "levels off" can mean: SQLite
// files never give pages back (the purged rows' pages are reused, so a
// file stops growing once the purge keeps pace, and each -wal file keeps
// its high-water size); the evidence journal keeps every record's index,
// leaf hash and identifiers and every tree node and checkpoint forever
// (decision 0086); a closed session keeps its header and counters, an
// audit session its row, a job its record. So the test asserts three
// things: the stores that hold payloads (all but the evidence journal)
// level off, and so does the whole data directory (soakLevelBound: the
// largest size of the run's last third over that of its middle third;
// linear growth from empty gives 1.5), and the evidence journal grows by
// at most soakEvidenceResidual bytes per record over the last third.
// It also asserts that every policy's purge removed something
// (/api/status retention.runs) and that evidence verify is clean with
// purged records after the server stopped.
func TestRetentionSoak(t *testing.T) {
	if os.Getenv("WEBCODEX_SOAK") != "1" {
		t.Skip("the retention soak runs for minutes: set WEBCODEX_SOAK=1 (and WEBCODEX_SOAK_DURATION, default 10m)")
	}
	duration := soakDefaultDuration
	if v := os.Getenv("WEBCODEX_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < soakMinDuration {
			t.Fatalf("WEBCODEX_SOAK_DURATION=%q: want a duration of at least %v", v, soakMinDuration)
		}
		duration = d
	}
	data, proj := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "a.txt"), []byte(strings.Repeat("soak line\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	one := 1
	s := startAppWith(t, data, func(c *app.Config) {
		c.Retention = app.RetentionConfig{SessionEventsDays: &one, JobOutputDays: &one, AuditEventsDays: &one, EvidencePayloadDays: &one}
		app.ShortenRetention(c, soakUnit, soakPurgeInterval)
	}, "soak="+proj)
	stopped := false
	defer func() {
		if !stopped {
			s.stop(t)
		}
	}()

	l := &soakLoad{s: s, project: "agent:local:soak", runs: map[string]retention.Run{}}
	tick := time.NewTicker(soakCallEvery)
	defer tick.Stop()
	start := time.Now()
	var samples []soakSample
	next := time.Duration(0)
	for elapsed := time.Duration(0); elapsed < duration; elapsed = time.Since(start) {
		if elapsed >= next {
			samples = append(samples, l.sample(t, data, elapsed))
			next += soakSampleEvery
		}
		l.step(t)
		<-tick.C
	}
	samples = append(samples, l.sample(t, data, time.Since(start)))
	logSoakSamples(t, samples)

	removed := map[string]int64{}
	for _, r := range l.runs {
		if r.Error != "" {
			t.Errorf("purge run failed: %+v", r)
		}
		removed[r.Store] += r.Removed.Items
	}
	t.Logf("purged (runs seen in /api/status): %v; %d sessions, %d calls", removed, l.sessions, l.calls)
	for _, store := range []string{"workflow", "jobs", "audit", "evidence"} {
		if removed[store] == 0 {
			t.Errorf("no purge run removed anything from %s: %v", store, removed)
		}
	}
	// The stores that hold payloads only (the evidence journal's residual
	// is bounded per record below) must level off.
	payload := func(s soakSample) int64 { return s.total - s.stores["evidence"] }
	middle, last := soakThirdMax(samples, duration, 1, payload), soakThirdMax(samples, duration, 2, payload)
	if middle == 0 || float64(last) > soakLevelBound*float64(middle) {
		t.Errorf("the payload stores did not level off: largest size %d bytes in the last third, %d in the middle third (bound %.2fx)", last, middle, soakLevelBound)
	}
	total := func(s soakSample) int64 { return s.total }
	middleAll, lastAll := soakThirdMax(samples, duration, 1, total), soakThirdMax(samples, duration, 2, total)
	if middleAll == 0 || float64(lastAll) > soakLevelBound*float64(middleAll) {
		t.Errorf("the data directory did not level off: largest size %d bytes in the last third, %d in the middle third (bound %.2fx)", lastAll, middleAll, soakLevelBound)
	}
	t.Logf("level: payload stores %.3fx, whole directory %.3fx (last third's largest size over the middle third's; bound %.2fx)",
		float64(last)/float64(middle), float64(lastAll)/float64(middleAll), soakLevelBound)
	from, to := soakThirdFirst(samples, duration, 2), samples[len(samples)-1]
	if calls := to.calls - from.calls; calls > 0 {
		per := float64(to.stores["evidence"]-from.stores["evidence"]) / float64(calls)
		t.Logf("evidence residual over the last third: %.0f bytes per record (%d records; bound %d)", per, calls, soakEvidenceResidual)
		if per > soakEvidenceResidual {
			t.Errorf("the evidence journal grew %.0f bytes per record over the last third, bound %d: are payloads purged?", per, soakEvidenceResidual)
		}
	}

	s.stop(t)
	stopped = true
	rep, err := app.VerifyJournal(context.Background(), app.Config{DataDir: data}, evidence.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean || rep.Purged == 0 {
		t.Fatalf("evidence verify after the soak: clean %v, purged %d of %d records, findings %v", rep.Clean, rep.Purged, rep.Records, rep.Totals)
	}
	t.Logf("evidence verify: clean, %d records, %d purged in %d ranges, %d checkpoints", rep.Records, rep.Purged, len(rep.PurgedRanges), rep.Checkpoints)
}

// soakLoad is the soak's stream of tool calls and what it saw.
type soakLoad struct {
	s        *server
	project  string
	session  string // the open session ("" between sessions)
	phase    int
	sessions int
	calls    int
	// runs are the purge runs /api/status showed, by store, policy and
	// start (it shows only the most recent retention.MaxRuns).
	runs map[string]retention.Run
}

// step makes the next call of the cycle work_on_project, read_files,
// write_project_file, run_process, run_job, close_session, each in the
// cycle's own Action Audit session (one audit session retains at most
// audit.MaxEventsPerSession events, so a single one would never age).
func (l *soakLoad) step(t *testing.T) {
	t.Helper()
	l.calls++
	switch l.phase {
	case 0:
		l.sessions++
		w := l.call(t, "work_on_project", map[string]any{"project": l.project, "instruction": fmt.Sprintf("soak session %d", l.sessions)}, "")
		l.session = str(t, w.Output["session_id"])
	case 1:
		l.call(t, "read_files", map[string]any{"project": l.project, "files": []any{map[string]any{"path": "a.txt"}}}, l.session)
	case 2:
		l.call(t, "write_project_file", map[string]any{"project": l.project, "path": fmt.Sprintf("out/%d.txt", l.sessions),
			"content": strings.Repeat(fmt.Sprintf("session %d\n", l.sessions), 100)}, l.session)
	case 3:
		l.call(t, "run_process", map[string]any{"project": l.project, "argv": []string{"seq", "1", fmt.Sprint(soakOutputLines)}}, l.session)
	case 4:
		l.call(t, "run_job", map[string]any{"project": l.project, "command": fmt.Sprintf("seq 1 %d", soakOutputLines)}, l.session)
	case 5:
		l.call(t, "close_session", map[string]any{"session_id": l.session}, "")
		l.session = ""
	}
	l.phase = (l.phase + 1) % 6
}

// call makes a REST tool call recorded in session recorder ("" for none)
// and audited in the cycle's Action Audit session; it must succeed.
func (l *soakLoad) call(t *testing.T, tool string, args map[string]any, recorder string) result {
	t.Helper()
	data := l.s.callBodyAt(t, l.s.token, fmt.Sprintf("/api/tools/call?action_session_id=soak-%d", l.sessions), tool, args, recorder)
	var r result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v %s", tool, err, data)
	}
	return must(t, r, tool)
}

// sample measures the data directory and notes the purge runs shown in
// /api/status.
func (l *soakLoad) sample(t *testing.T, data string, at time.Duration) soakSample {
	t.Helper()
	sizes, err := app.DiskUsage(data)
	if err != nil {
		t.Fatal(err)
	}
	out := soakSample{at: at, calls: l.calls, stores: map[string]int64{}}
	for _, s := range sizes {
		out.total += s.Bytes
		out.stores[s.Store] = s.Bytes
	}
	code, body := l.s.do(t, l.s.token, "GET", "/api/status", nil)
	var status struct {
		Retention app.RetentionStatus `json:"retention"`
	}
	if err := json.Unmarshal(body, &status); code != 200 || err != nil {
		t.Fatalf("/api/status: %d %v %s", code, err, body)
	}
	for _, r := range status.Retention.Runs {
		l.runs[r.Store+" "+r.Policy+" "+r.Started.String()] = r
	}
	return out
}

// soakThirdMax is the largest size (of samples) sampled in third i (0, 1,
// 2) of a run of duration d.
func soakThirdMax(samples []soakSample, d time.Duration, i int, size func(soakSample) int64) int64 {
	var m int64
	for _, s := range samples {
		if soakThird(s, d) == i {
			m = max(m, size(s))
		}
	}
	return m
}

// soakThirdFirst is the first sample of third i of a run of duration d
// (the last sample when the third has none).
func soakThirdFirst(samples []soakSample, d time.Duration, i int) soakSample {
	for _, s := range samples {
		if soakThird(s, d) == i {
			return s
		}
	}
	return samples[len(samples)-1]
}

// soakThird is the third (0, 1, 2) of a run of duration d that s is in.
func soakThird(s soakSample, d time.Duration) int { return min(int(3*s.at/d), 2) }

// logSoakSamples logs the series as a table: elapsed, total, and the
// stores that hold payloads.
func logSoakSamples(t *testing.T, samples []soakSample) {
	t.Helper()
	cols := []string{"workflow", "evidence", "audit", "jobs"}
	var b strings.Builder
	fmt.Fprintf(&b, "%8s %7s %12s", "elapsed", "calls", "total")
	for _, c := range cols {
		fmt.Fprintf(&b, " %12s", c)
	}
	b.WriteString("\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "%8s %7d %12d", s.at.Round(time.Second), s.calls, s.total)
		for _, c := range cols {
			fmt.Fprintf(&b, " %12d", s.stores[c])
		}
		b.WriteString("\n")
	}
	t.Logf("data directory (bytes):\n%s", b.String())
}
