package auth

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// AdminTokenFile is the conventional name of the first-start admin
// credential file inside the data directory.
const AdminTokenFile = "admin-token"

// AdminTokenName is the name of the token EnsureAdmin creates.
const AdminTokenName = "admin"

// EnsureAdmin makes sure a first-start admin credential exists at path.
//
// When path does not exist, it creates an API token named AdminTokenName
// for DefaultOwner with the admin scope, writes the raw token (plus a
// newline) to path with mode 0600 atomically (temporary file, fsync, then a
// no-clobber link or rename into place, then a directory fsync) and returns
// (raw, true). The caller prints it once. The raw token lives only in that
// file by design; the database holds its hash.
//
// When path exists, it returns its trimmed contents and false, tightening
// the file's mode to 0600 if it was more permissive. It does not check that
// the stored credential still authenticates (it may have been revoked on
// purpose).
//
// If two processes race on a fresh data directory, exactly one file wins;
// the loser revokes the token it created and returns the winner's contents
// with created=false.
//
// Errors: the store's errors from creating the token, and wrapped I/O errors
// (an existing path that is not a regular file or is empty is an error).
// No error message contains the credential.
func (s *Service) EnsureAdmin(ctx context.Context, path string) (raw string, created bool, err error) {
	if raw, ok, err := readAdminFile(path); err != nil || ok {
		return raw, false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("auth: create %s: %w", dir, err)
	}
	raw, tok, err := s.CreateToken(ctx, AdminTokenName, DefaultOwner, []Scope{ScopeAdmin})
	if err != nil {
		return "", false, err
	}
	won, err := writeNoClobber(path, []byte(raw+"\n"))
	if err != nil {
		// The token is unusable because nobody can learn it; revoke it so
		// that the list does not show a live orphan.
		if _, rerr := s.RevokeToken(context.WithoutCancel(ctx), tok.ID); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return "", false, err
	}
	if !won {
		if _, err := s.RevokeToken(context.WithoutCancel(ctx), tok.ID); err != nil {
			return "", false, err
		}
		existing, ok, err := readAdminFile(path)
		if err != nil {
			return "", false, err
		}
		if !ok {
			return "", false, fmt.Errorf("auth: admin credential file %s vanished", path)
		}
		return existing, false, nil
	}
	return raw, true, nil
}

// readAdminFile returns the trimmed credential at path and true, or false
// when the file does not exist.
func readAdminFile(path string) (string, bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("auth: admin credential file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("auth: admin credential file %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return "", false, fmt.Errorf("auth: restrict admin credential file: %w", err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false, fmt.Errorf("auth: read admin credential file: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", false, fmt.Errorf("auth: admin credential file %s is empty", path)
	}
	return v, true, nil
}

// writeTemp writes data, mode 0600 and synced, to a new temporary file
// beside path and returns its name. The caller installs it (a link or a
// rename) and removes it whatever happens; what names the file says what
// failed.
func writeTemp(path string, data []byte, what string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("auth: write %s: %w", what, err)
	}
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("auth: write %s: %w", what, err)
	}
	return f.Name(), nil
}

// writeNoClobber atomically creates path with data and mode 0600. It
// reports false, without error, when path already exists.
func writeNoClobber(path string, data []byte) (bool, error) {
	dir := filepath.Dir(path)
	tmp, err := writeTemp(path, data, "admin credential")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp) // a no-op after a successful rename
	// A hard link refuses to replace an existing file, so concurrent first
	// starts cannot overwrite each other's credential. File systems without
	// hard links fall back to a rename, guarded by a fresh existence check.
	switch err := os.Link(tmp, path); {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		return false, nil
	default:
		if _, serr := os.Lstat(path); serr == nil {
			return false, nil
		}
		if err := os.Rename(tmp, path); err != nil {
			return false, fmt.Errorf("auth: install admin credential: %w", err)
		}
	}
	if err := syncDir(dir); err != nil {
		return false, err
	}
	return true, nil
}
