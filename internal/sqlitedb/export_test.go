package sqlitedb

// SetOnGather sets the function the writer calls when a batch begins to
// gather behind writes (see GatherBehind). Call it before any write.
func SetOnGather(w *Writer, f func()) { w.onGather = f }

// BatchBucket is batchBucket, for the test of the batch size classes.
func BatchBucket(n int) int { return batchBucket(n) }
