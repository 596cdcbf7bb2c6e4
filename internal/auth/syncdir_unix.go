//go:build unix

package auth

import (
	"fmt"
	"os"
)

// syncDir fsyncs the directory dir, making a new entry in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("auth: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("auth: sync %s: %w", dir, err)
	}
	return nil
}
