package app

// WaitEvidence returns once the evidence appends of read-only calls that
// are in flight (appended concurrently with their responses) are done, so
// a test reads the journal after a real signal instead of polling it.
func (a *App) WaitEvidence() { a.evSink.wait() }
