package auth

import (
	"errors"
	"fmt"
	"os"
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
	const what = "the served bootstrap credential"
	tmp, err := writeTemp(path, []byte(BootstrapDigest(bootstrap)+"\n"), what)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("auth: record %s: %w", what, err)
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
