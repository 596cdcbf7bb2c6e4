package main

import "runtime/debug"

// releaseStartupMemory returns to the operating system, once and in the
// background, the heap pages that start-up allocated and has since
// dropped (migrations, schema reflection, the first prepared statements).
// The runtime's background scavenger keeps the heap up to about a tenth
// over its goal resident, so without this a freshly started, idle server
// holds about twice its live heap (decision 0058). It costs one garbage
// collection and a scavenge on a goroutine of its own, off the serving
// path; later growth of the heap is left to the runtime. Callers call it
// once, after start-up is complete and before serving requests.
func releaseStartupMemory() {
	go debug.FreeOSMemory()
}
