package evidence

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// Checkpoint is a tree head: C2SP tlog-checkpoint body lines origin, size
// and base64 root hash.
type Checkpoint struct {
	Origin string `json:"origin"`
	Size   uint64 `json:"size"`
	Root   []byte `json:"root_hash"`
}

// Body returns the checkpoint note text: "<origin>\n<size>\n<base64 root>\n".
func (c Checkpoint) Body() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root))
}

// SignedCheckpoint is a checkpoint with its signed note.
type SignedCheckpoint struct {
	Checkpoint
	KeyID     string    `json:"key_id"`
	Note      string    `json:"note"`
	CreatedAt time.Time `json:"created_at"`
}

// Checkpoint errors, distinguished by verification.
var (
	ErrUnknownKey           = errors.New("evidence: checkpoint is not signed by a known key")
	ErrBadSignature         = errors.New("evidence: checkpoint signature is invalid")
	ErrMalformedCheckpoint  = errors.New("evidence: malformed checkpoint")
	errCheckpointRootLength = errors.New("root hash is not 32 bytes")
)

// SignCheckpoint signs c with k.
func SignCheckpoint(c Checkpoint, k *Key, now time.Time) (SignedCheckpoint, error) {
	msg, err := note.Sign(&note.Note{Text: c.Body()}, k.Signer)
	if err != nil {
		return SignedCheckpoint{}, fmt.Errorf("evidence: sign checkpoint: %w", err)
	}
	return SignedCheckpoint{Checkpoint: c, KeyID: k.ID, Note: string(msg), CreatedAt: now.UTC()}, nil
}

// OpenCheckpoint verifies a signed checkpoint note against keys and parses
// its body. It returns the id of the (first) trusted key that signed it.
// Errors wrap ErrUnknownKey (no signature by a trusted key),
// ErrBadSignature (a trusted key's signature does not verify) or
// ErrMalformedCheckpoint.
func OpenCheckpoint(msg []byte, keys *KeySet) (Checkpoint, string, error) {
	n, err := note.Open(msg, keys)
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			ids := []string{}
			for _, s := range unverified.Note.UnverifiedSigs {
				ids = append(ids, KeyID(s.Hash))
			}
			return Checkpoint{}, strings.Join(ids, ","), fmt.Errorf("%w (signed by %s)", ErrUnknownKey, strings.Join(ids, ","))
		case errors.As(err, &invalid):
			return Checkpoint{}, KeyID(invalid.Hash), fmt.Errorf("%w (key %s)", ErrBadSignature, KeyID(invalid.Hash))
		default:
			return Checkpoint{}, "", fmt.Errorf("%w: %v", ErrMalformedCheckpoint, err)
		}
	}
	c, err := ParseCheckpointBody(n.Text)
	if err != nil {
		return Checkpoint{}, "", err
	}
	return c, KeyID(n.Sigs[0].Hash), nil
}

// ParseCheckpointBody parses the body of a checkpoint note. Extension lines
// after the root are allowed (C2SP) and ignored.
func ParseCheckpointBody(text string) (Checkpoint, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 || lines[0] == "" {
		return Checkpoint{}, fmt.Errorf("%w: want origin, size and root lines", ErrMalformedCheckpoint)
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != lines[1] {
		return Checkpoint{}, fmt.Errorf("%w: bad size %q", ErrMalformedCheckpoint, lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != 32 {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrMalformedCheckpoint, errCheckpointRootLength)
	}
	return Checkpoint{Origin: lines[0], Size: size, Root: root}, nil
}

// Equal reports whether two checkpoints name the same tree head.
func (c Checkpoint) Equal(o Checkpoint) bool {
	return c.Origin == o.Origin && c.Size == o.Size && bytes.Equal(c.Root, o.Root)
}
