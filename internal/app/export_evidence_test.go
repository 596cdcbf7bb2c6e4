package app

// WaitEvidence returns once the evidence appends of read-only calls queued
// behind their responses so far have committed or failed, so a test reads
// the journal's writer statistics after a real signal instead of polling.
func (a *App) WaitEvidence() { a.evSink.wait() }
