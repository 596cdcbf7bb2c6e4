package app

import (
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/retention"
)

// TestRetentionUnitDefaults: without the soak's seam a policy counts in
// days and the purger passes every retention.Interval; with it, in the
// unit and interval the test set.
func TestRetentionUnitDefaults(t *testing.T) {
	var r RetentionConfig
	if got := r.age(3); got != retention.Days(3) || r.passInterval() != retention.Interval {
		t.Fatalf("default: age(3) = %v, interval %v", got, r.passInterval())
	}
	var c Config
	ShortenRetention(&c, time.Minute, 20*time.Second)
	if got := c.Retention.age(3); got != 3*time.Minute || c.Retention.passInterval() != 20*time.Second {
		t.Fatalf("shortened: age(3) = %v, interval %v", got, c.Retention.passInterval())
	}
}
