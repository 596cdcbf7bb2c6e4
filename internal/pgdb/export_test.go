package pgdb

import "time"

// SetLockCheckEvery makes Holds made from now on check their connection
// every d, and returns the function that restores the interval.
func SetLockCheckEvery(d time.Duration) func() {
	old := lockCheckEvery
	lockCheckEvery = d
	return func() { lockCheckEvery = old }
}

// HoldOf is r's Hold.
func HoldOf(r *Replica) *Hold { return r.hold }
