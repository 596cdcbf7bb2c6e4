package evidence

import (
	"errors"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
)

// ErrForeignKey is the cause of a journal's refusal of a signing key that
// is not the journal's own (see CheckSigningKey), whatever stores the journal.
var ErrForeignKey = errors.New("it is not this journal's signing key and is never adopted; restore the journal's own " +
	KeyFile + " from a backup, or start a new journal")

// MaxListedSigners bounds the checkpoint signer ids a key refusal names.
const MaxListedSigners = 8

// KeyFacts are what CheckSigningKey needs to know of a journal; each storage
// driver reads them from its own tables, in one snapshot.
type KeyFacts struct {
	// NewestRecordKey is the key id the newest record is bound to, when
	// HasRecords.
	NewestRecordKey string
	HasRecords      bool
	// Newest is the newest (largest) stored checkpoint, when
	// HasCheckpoints.
	Newest         SignedCheckpoint
	HasCheckpoints bool
	// Signed reports whether the key with id signed a stored checkpoint.
	Signed func(id string) (bool, error)
	// Signers lists the stored checkpoints' key ids (at most
	// MaxListedSigners, then "..."), for the refusal's message.
	Signers func() (string, error)
	// Trusted returns the keys the newest checkpoint may verify with: the
	// journal's listed public keys and the current key's.
	Trusted func() (*KeySet, error)
	// StartOver, when set, ends a refusal's message: how to start a new
	// journal on this storage instead.
	StartOver string
}

// CheckSigningKey refuses a signing key that is not the journal's own. For a
// journal with records or checkpoints, key must have signed at least one
// stored checkpoint, the newest checkpoint must verify with a trusted key
// (key or a retired key), and the newest record must be bound to key or to
// a key that signed a checkpoint; a journal with records and no checkpoint
// needs its newest record bound to key. An empty journal accepts any key.
// A refusal is failure.Unavailable wrapping ErrForeignKey, naming keyFile,
// the key's id and the journal's; a fact that cannot be read is
// failure.Unavailable. It only reads.
func CheckSigningKey(f KeyFacts, key *Key, keyFile string) error {
	refuse := func(format string, args ...any) error {
		if f.StartOver != "" {
			format += " (" + strings.ReplaceAll(f.StartOver, "%", "%%") + ")"
		}
		return failure.Wrap(failure.Unavailable, ErrForeignKey, format, args...)
	}
	if !f.HasCheckpoints {
		if f.HasRecords && f.NewestRecordKey != key.ID {
			return refuse("%s is key %s, but the journal's records are bound to key %s and no checkpoint was signed", keyFile, key.ID, f.NewestRecordKey)
		}
		return nil
	}
	keySigned, err := f.Signed(key.ID)
	if err != nil {
		return failure.Wrap(failure.Unavailable, err, "read evidence checkpoints")
	}
	if !keySigned {
		signers, err := f.Signers()
		if err != nil {
			return failure.Wrap(failure.Unavailable, err, "read evidence checkpoints")
		}
		return refuse("%s is key %s, but the journal's checkpoints are signed by key %s", keyFile, key.ID, signers)
	}
	trusted, err := f.Trusted()
	if err != nil {
		return failure.Wrap(failure.Unavailable, err, "read the evidence public keys")
	}
	if _, _, err := OpenCheckpoint([]byte(f.Newest.Note), trusted); err != nil {
		return refuse("the newest checkpoint (size %d, key %s) does not verify with %s (key %s) or a retired key of the journal: %v",
			f.Newest.Size, f.Newest.KeyID, keyFile, key.ID, err)
	}
	if f.HasRecords && f.NewestRecordKey != key.ID {
		ok, err := f.Signed(f.NewestRecordKey)
		if err != nil {
			return failure.Wrap(failure.Unavailable, err, "read evidence checkpoints")
		}
		if !ok {
			return refuse("%s is key %s, but the newest record is bound to key %s, which signed no checkpoint", keyFile, key.ID, f.NewestRecordKey)
		}
	}
	return nil
}

// ListSigners joins checkpoint signer ids for a refusal's message, at most
// MaxListedSigners of them, then "...".
func ListSigners(ids []string) string {
	if len(ids) > MaxListedSigners {
		ids = append(ids[:MaxListedSigners:MaxListedSigners], "...")
	}
	return strings.Join(ids, ", ")
}
