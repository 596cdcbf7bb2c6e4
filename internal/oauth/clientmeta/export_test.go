package clientmeta

import "time"

// SetTimeout replaces f's FetchTimeout, so that a test of a server that
// never answers need not wait FetchTimeout.
func SetTimeout(f *Fetcher, d time.Duration) { f.timeout = d }

// Timeout returns f's fetch timeout.
func Timeout(f *Fetcher) time.Duration { return f.timeout }
