package app_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/retention"
)

// writeConfig writes body as a fresh data directory's config.toml.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, app.ConfigFile), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRetentionConfig(t *testing.T) {
	t.Run("UnsetKeepsForever", func(t *testing.T) {
		cfg, err := app.LoadConfig(t.TempDir(), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		r := cfg.Retention
		if r.SessionEventsDays != nil || r.JobOutputDays != nil || r.JobOutputBytesPerProject != nil || r.AuditEventsDays != nil || r.EvidencePayloadDays != nil {
			t.Fatalf("default retention = %+v, want every key unset", r)
		}
	})
	t.Run("Set", func(t *testing.T) {
		dir := writeConfig(t, fmt.Sprintf("[retention]\nsession_events_days = 30\njob_output_days = 7\njob_output_bytes_per_project = 1048576\naudit_events_days = 90\nevidence_payload_days = %d\n", retention.MaxDays))
		cfg, err := app.LoadConfig(dir, env(nil))
		if err != nil {
			t.Fatal(err)
		}
		r := cfg.Retention
		if *r.SessionEventsDays != 30 || *r.JobOutputDays != 7 || *r.JobOutputBytesPerProject != 1<<20 || *r.AuditEventsDays != 90 || *r.EvidencePayloadDays != retention.MaxDays {
			t.Fatalf("retention = %+v", r)
		}
	})
	days := []string{"session_events_days", "job_output_days", "audit_events_days", "evidence_payload_days"}
	for _, key := range append(days, "job_output_bytes_per_project") {
		bad := []string{"0", "-1", `"ten"`, "1.5", `"30d"`, "true", "99999999999999999999"}
		if key != "job_output_bytes_per_project" {
			bad = append(bad, fmt.Sprint(retention.MaxDays+1))
		}
		for _, v := range bad {
			t.Run("Err/"+key+"="+v, func(t *testing.T) {
				dir := writeConfig(t, "[retention]\n"+key+" = "+v+"\n")
				before, _ := os.ReadDir(dir)
				_, err := app.LoadConfig(dir, env(nil))
				var ce *app.ConfigError
				if !errors.As(err, &ce) || ce.Key != "retention."+key || !strings.Contains(err.Error(), "retention."+key) {
					t.Fatalf("got %v, want a ConfigError naming retention.%s", err, key)
				}
				if after, _ := os.ReadDir(dir); len(after) != len(before) {
					t.Fatalf("a refused configuration wrote to the data directory: %d entries, was %d", len(after), len(before))
				}
			})
		}
	}
}

func TestRetentionMaxDays(t *testing.T) {
	if err := retention.ValidDays(retention.MaxDays); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, -1, retention.MaxDays + 1} {
		if retention.ValidDays(n) == nil {
			t.Errorf("%d days accepted", n)
		}
	}
	if retention.Days(retention.MaxDays) <= 0 {
		t.Fatal("MaxDays overflows a duration")
	}
}
