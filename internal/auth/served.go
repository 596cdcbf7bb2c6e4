package auth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ServedBootstrapFile is the file in the data directory where a serving
// process records which bootstrap credential (WEBCODEX_TOKEN) it accepts,
// as its digest, so that verbs run beside it (`webcodex attention`) treat
// a credential exactly as the server does. The credential in a verb's own
// environment is the caller's, never the server's bootstrap.
const ServedBootstrapFile = "served-bootstrap"

// RecordServedBootstrap records at path the BootstrapDigest of bootstrap
// (mode 0600, written to a temporary file, synced and renamed into place),
// or removes path when bootstrap is "" (this server accepts none). The
// credential itself is never written.
func RecordServedBootstrap(path, bootstrap string) error {
	if bootstrap == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("auth: remove %s: %w", path, err)
		}
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("auth: record the served bootstrap credential: %w", err)
	}
	_, err = f.WriteString(BootstrapDigest(bootstrap) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("auth: record the served bootstrap credential: %w", err)
	}
	return nil
}

// ReadServedBootstrap returns the digest recorded at path, for
// Options.BootstrapDigest; "" when none is recorded.
func ReadServedBootstrap(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("auth: read %s: %w", path, err)
	}
	return strings.TrimSpace(string(b)), nil
}
