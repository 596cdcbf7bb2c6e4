package evidence

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// Key files in the data directory.
const (
	// KeyFile holds the current signing key: one line, the note signer key
	// "PRIVATE+KEY+<name>+<hash>+<base64>", mode 0600. It is never
	// regenerated silently (see the key policy in docs/evidence.md).
	KeyFile = "evidence.key"
	// PublicKeysFile lists every public (verifier) key this journal has
	// signed with, current and retired, one note verifier key
	// "<name>+<hash>+<base64>" per line. It is append-only; keep a copy
	// outside the data directory to verify against.
	PublicKeysFile = "evidence.pub"
)

// ErrNoKey reports that KeyFile does not exist.
var ErrNoKey = errors.New("evidence: signing key file does not exist")

// Key is a signing key and its public half.
type Key struct {
	Signer note.Signer
	// VerifierKey is the public key in note verifier format.
	VerifierKey string
	// ID is the key id: the note key hash as 8 lowercase hex digits.
	ID string
	// skey is the private key in note signer format, as KeyFile holds it.
	skey string
}

// KeyID formats a note key hash as a key id.
func KeyID(hash uint32) string { return fmt.Sprintf("%08x", hash) }

// LoadKey reads KeyFile from dataDir. A missing file is ErrNoKey; any other
// problem (unreadable, not a note Ed25519 signer key) is a descriptive
// error. It never creates or changes a file.
func LoadKey(dataDir string) (*Key, error) { return LoadKeyFile(filepath.Join(dataDir, KeyFile)) }

// LoadKeyFile reads the signing key file at path, as LoadKey does for a
// data directory's KeyFile: a missing file is ErrNoKey. It never creates
// or changes a file.
func LoadKeyFile(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoKey
	}
	if err != nil {
		return nil, fmt.Errorf("evidence: read signing key %s: %w", path, err)
	}
	k, err := parseSignerKey(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("evidence: signing key %s is not a valid Ed25519 note signer key: %w", path, err)
	}
	return k, nil
}

func parseSignerKey(skey string) (*Key, error) {
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, err
	}
	// skey = PRIVATE+KEY+<name>+<hash>+<base64(alg || seed)>
	parts := strings.SplitN(skey, "+", 5) // the base64 part may contain '+'
	if len(parts) != 5 {
		return nil, errors.New("not a signer key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return nil, errors.New("not an Ed25519 key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(s.Name(), pub)
	if err != nil {
		return nil, err
	}
	return &Key{Signer: s, VerifierKey: vkey, ID: KeyID(s.KeyHash()), skey: skey}, nil
}

// CreateKey generates a new Ed25519 key named name, writes it to KeyFile
// (exclusive create, mode 0600, fsync'd) and appends its public key to
// PublicKeysFile. It fails if KeyFile already exists. Callers decide when
// creating a key is allowed (only for an empty journal).
func CreateKey(dataDir, name string) (*Key, error) {
	k, err := CreateKeyFile(filepath.Join(dataDir, KeyFile), name)
	if err != nil {
		return nil, err
	}
	if err := AddPublicKey(dataDir, k.VerifierKey); err != nil {
		return nil, err
	}
	return k, nil
}

// CreateKeyFile generates a new Ed25519 key named name and writes it to
// path (exclusive create, mode 0600, fsync'd, its directory created 0700
// when missing and fsync'd). It fails, wrapping os.ErrExist, if path
// exists. It lists the public key nowhere: that is the caller's journal's
// business.
func CreateKeyFile(path, name string) (*Key, error) {
	k, err := GenerateKey(name)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("evidence: create signing key: %w", err)
	}
	_, err = f.WriteString(k.skey + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("evidence: write signing key: %w", err)
	}
	syncDir(dir)
	return k, nil
}

// GenerateKey returns a new Ed25519 key named name, in memory only.
func GenerateKey(name string) (*Key, error) {
	skey, _, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return nil, fmt.Errorf("evidence: generate key: %w", err)
	}
	return parseSignerKey(skey)
}

// RetiredKeyFile is the file name ReplaceKey keeps a retired private key
// under.
func RetiredKeyFile(id string) string { return KeyFile + ".retired-" + id }

// ReplaceKey makes k the signing key of dataDir: it adds k's public key
// to PublicKeysFile (the current key's is kept there), keeps the current
// private key as RetiredKeyFile(id) and replaces KeyFile atomically (a
// temporary file, mode 0600, fsync'd, renamed over KeyFile, directory
// fsync'd), so that at every instant KeyFile is the old key or the new
// one, whole. It returns the retired key. It changes only key files: a
// journal's key is rotated by evidencedb.RotateKey, which also signs the
// head with the new key (a journal whose key never signed one of its
// checkpoints does not open).
func ReplaceKey(dataDir string, k *Key) (*Key, error) {
	old, err := LoadKey(dataDir)
	if err != nil {
		return nil, err
	}
	if old.ID == k.ID {
		return nil, fmt.Errorf("evidence: the new key is the current key %s", k.ID)
	}
	if err := AddPublicKey(dataDir, old.VerifierKey); err != nil {
		return nil, err
	}
	if err := AddPublicKey(dataDir, k.VerifierKey); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(dataDir, RetiredKeyFile(old.ID), old.skey+"\n"); err != nil {
		return nil, fmt.Errorf("evidence: retire key %s: %w", old.ID, err)
	}
	if err := writeFileAtomic(dataDir, KeyFile, k.skey+"\n"); err != nil {
		return nil, fmt.Errorf("evidence: replace signing key: %w", err)
	}
	return old, nil
}

// writeFileAtomic replaces dir/name with data, mode 0600: written to a
// temporary file in dir, fsync'd, renamed over name, and dir fsync'd.
func writeFileAtomic(dir, name, data string) error {
	f, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.WriteString(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(dir)
	return nil
}

// LoadPublicKeys returns the verifier keys listed in PublicKeysFile (none
// when it does not exist).
func LoadPublicKeys(dataDir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, PublicKeysFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("evidence: read public keys: %w", err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, nil
}

// AddPublicKey appends vkey to PublicKeysFile unless it is listed already
// (fsync'd).
func AddPublicKey(dataDir, vkey string) error {
	have, err := LoadPublicKeys(dataDir)
	if err != nil {
		return err
	}
	for _, h := range have {
		if h == vkey {
			return nil
		}
	}
	f, err := os.OpenFile(filepath.Join(dataDir, PublicKeysFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("evidence: public keys: %w", err)
	}
	_, err = f.WriteString(vkey + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("evidence: public keys: %w", err)
	}
	syncDir(dataDir)
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// KeySet is a set of trusted public keys, looked up by key id.
type KeySet struct {
	byID map[string]note.Verifier
	keys []string
}

// NewKeySet parses note verifier keys. Duplicates are ignored.
func NewKeySet(vkeys ...string) (*KeySet, error) {
	s := &KeySet{byID: map[string]note.Verifier{}}
	for _, vk := range vkeys {
		v, err := note.NewVerifier(vk)
		if err != nil {
			return nil, fmt.Errorf("evidence: public key %q: %w", vk, err)
		}
		id := KeyID(v.KeyHash())
		if _, ok := s.byID[id]; ok {
			continue
		}
		s.byID[id] = v
		s.keys = append(s.keys, vk)
	}
	return s, nil
}

// Has reports whether id is a trusted key id.
func (s *KeySet) Has(id string) bool { _, ok := s.byID[id]; return ok }

// IDs returns the trusted key ids, sorted.
func (s *KeySet) IDs() []string {
	out := make([]string, 0, len(s.byID))
	for id := range s.byID {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// VerifierKeys returns the keys in the order given.
func (s *KeySet) VerifierKeys() []string { return append([]string(nil), s.keys...) }

// Verifier implements note.Verifiers.
func (s *KeySet) Verifier(name string, hash uint32) (note.Verifier, error) {
	v, ok := s.byID[KeyID(hash)]
	if !ok || v.Name() != name {
		return nil, &note.UnknownVerifierError{Name: name, KeyHash: hash}
	}
	return v, nil
}

// TrustedKeys returns the key set Verify uses for dataDir: explicit when
// non-empty (then nothing in dataDir is trusted), else every key in
// PublicKeysFile plus the public half of KeyFile when it is readable.
func TrustedKeys(dataDir string, explicit []string) (*KeySet, error) {
	if len(explicit) > 0 {
		return NewKeySet(explicit...)
	}
	keys, err := LoadPublicKeys(dataDir)
	if err != nil {
		return nil, err
	}
	if k, err := LoadKey(dataDir); err == nil {
		keys = append(keys, k.VerifierKey)
	}
	return NewKeySet(keys...)
}
