//go:build unix

package sqlitedb

// syncDir fsyncs the directory dir, making a new entry in it durable.
func syncDir(dir string) error { return syncFile(dir) }
