package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/ident"
)

// RunnerTokenPrefix starts every raw runner token. A runner token
// authenticates one `webcodex runner` (its client id) on the runner channel
// only: it carries no scope, calls no tool, and Authenticate refuses it.
const RunnerTokenPrefix = "wc_runner_"

var rawRunnerTokenLen = len(RunnerTokenPrefix) + base64.RawURLEncoding.EncodedLen(tokenSecretBytes)

// WellFormedRunnerToken reports whether raw has the exact shape of a runner
// token.
func WellFormedRunnerToken(raw string) bool {
	if len(raw) != rawRunnerTokenLen || !strings.HasPrefix(raw, RunnerTokenPrefix) {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(raw[len(RunnerTokenPrefix):])
	return err == nil && len(b) == tokenSecretBytes
}

// CreateRunnerToken issues a token for the runner clientID of the authority
// group owner and returns the raw token (shown once, never stored) and its
// record. A client id belongs to one owner: a new token for a client id
// another owner's live token holds is refused, so no runner can register
// projects under another owner.
//
// Errors: failure.InvalidArguments for a client id that is not 1-64
// letters, digits, '.', '_' or '-', or an invalid owner;
// failure.PermissionDenied when the client id belongs to another owner.
func (s *Service) CreateRunnerToken(ctx context.Context, clientID, owner string) (string, Token, error) {
	if !ident.Valid(clientID) {
		return "", Token{}, failure.New(failure.InvalidArguments, "client id %q must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", clientID)
	}
	if err := validLabel("owner", owner, MaxOwner); err != nil {
		return "", Token{}, err
	}
	toks, err := s.store.List(ctx)
	if err != nil {
		return "", Token{}, err
	}
	for _, t := range toks {
		if t.Runner == clientID && !t.Revoked() && t.Owner != owner {
			return "", Token{}, failure.New(failure.PermissionDenied, "runner %q belongs to another owner", clientID)
		}
	}
	b := make([]byte, tokenSecretBytes)
	rand.Read(b)
	raw := RunnerTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	t := Token{ID: newTokenID(), Name: "runner " + clientID, Owner: owner, Scopes: []Scope{}, CreatedAt: s.clock(), Runner: clientID, Kind: KindAPIToken}
	if err := s.store.Create(ctx, t, HashToken(raw)); err != nil {
		return "", Token{}, err
	}
	return raw, t, nil
}

// AuthenticateRunner returns the live runner token raw stands for.
//
// Errors: failure.Unauthenticated for anything but a well-formed, known,
// unrevoked runner token (an API token included; the message never echoes
// the credential); failure.Unavailable when the store cannot be read.
func (s *Service) AuthenticateRunner(ctx context.Context, raw string) (Token, error) {
	if !WellFormedRunnerToken(raw) {
		return Token{}, failure.New(failure.Unauthenticated, "the credential is not a runner token")
	}
	t, err := s.store.FindByHash(ctx, HashToken(raw))
	if failure.Is(err, failure.NotFound) {
		return Token{}, failure.New(failure.Unauthenticated, "the runner token is unknown or revoked")
	}
	if err != nil {
		return Token{}, failure.Wrap(failure.Unavailable, err, "the credential store is unavailable")
	}
	if t.Revoked() || t.Runner == "" {
		return Token{}, failure.New(failure.Unauthenticated, "the runner token is unknown or revoked")
	}
	return t, nil
}
