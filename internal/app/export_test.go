package app

import "time"

// ShortenRetention makes cfg's [retention] policies count in unit instead
// of days and its background purger pass every interval, so that a test
// (the retention soak) sees a policy of minutes purge in the real server.
func ShortenRetention(cfg *Config, unit, interval time.Duration) {
	cfg.Retention.unit, cfg.Retention.interval = unit, interval
}
