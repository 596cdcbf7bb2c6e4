//go:build windows

package sqlitedb

// syncDir does nothing on Windows: a directory cannot be flushed there
// (FlushFileBuffers needs a handle open for writing, which a directory
// never is), and NTFS journals the link or rename that made the entry, so
// it survives a crash once the file behind it was synced.
func syncDir(dir string) error { return nil }
