package accesstoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// MinKeyFetchInterval is the least time between two fetches of the JWKS.
// The JWKS is fetched again when no cached key verifies a token (an unknown
// `kid`, or a forged signature); within this interval such a token is
// refused without a fetch, so a stream of made-up tokens costs the issuer at
// most one fetch per interval.
const MinKeyFetchInterval = 10 * time.Second

// remoteKeys is the issuer's JWKS, fetched on first use, again when no
// cached key verifies a signature (at most once per MinKeyFetchInterval),
// and again when the fetched keys are KeySetLifetime old.
type remoteKeys struct {
	url    string
	client *http.Client
	now    func() time.Time

	current atomic.Pointer[fetchedKeys] // the last good JWKS

	mu      sync.Mutex // held during a fetch: one fetch at a time
	fetched time.Time  // when the last fetch started, under mu
}

type fetchedKeys struct {
	keys []jose.JSONWebKey
	at   time.Time
}

// errNoKey is a signature no key of the issuer's current JWKS verifies.
var errNoKey = errors.New("no key of the issuer verifies the signature")

// fresh returns the cached keys unless they are KeySetLifetime old.
func (r *remoteKeys) fresh() *fetchedKeys {
	if c := r.current.Load(); c != nil && r.now().Sub(c.at) < KeySetLifetime {
		return c
	}
	return nil
}

// verify returns jws's payload when a key of the issuer verifies it.
// Errors: errNoKey; any other error means the JWKS could not be fetched.
func (r *remoteKeys) verify(ctx context.Context, jws *jose.JSONWebSignature) ([]byte, error) {
	kid := jws.Signatures[0].Header.KeyID
	if p, ok := tryKeys(r.fresh(), kid, jws); ok {
		return p, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Another call may have fetched while this one waited.
	if p, ok := tryKeys(r.fresh(), kid, jws); ok {
		return p, nil
	}
	now := r.now()
	if !r.fetched.IsZero() && now.Sub(r.fetched) < MinKeyFetchInterval {
		if r.fresh() == nil {
			return nil, fmt.Errorf("the JWKS could not be fetched less than %v ago", MinKeyFetchInterval)
		}
		return nil, errNoKey
	}
	prev := r.fetched
	r.fetched = now
	keys, err := r.fetch(ctx)
	if err != nil {
		if ctx.Err() != nil { // a caller that gave up says nothing about the issuer
			r.fetched = prev
		}
		return nil, err
	}
	c := &fetchedKeys{keys: keys, at: now}
	r.current.Store(c)
	if p, ok := tryKeys(c, kid, jws); ok {
		return p, nil
	}
	return nil, errNoKey
}

// tryKeys verifies jws with the keys whose kid matches (every key when the
// token names none).
func tryKeys(c *fetchedKeys, kid string, jws *jose.JSONWebSignature) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	for i := range c.keys {
		k := &c.keys[i]
		if kid != "" && k.KeyID != kid {
			continue
		}
		if p, err := jws.Verify(k); err == nil {
			return p, true
		}
	}
	return nil, false
}

// fetch reads the JWKS. Keys that are not public signing keys of a type
// go-jose knows are skipped (RFC 7517 §5), as are keys marked for
// encryption; a document that is not a JWKS is an error.
func (r *remoteKeys) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the JWKS answered status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("the JWKS is not valid JSON: %w", err)
	}
	keys := make([]jose.JSONWebKey, 0, len(set.Keys))
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if json.Unmarshal(raw, &k) != nil || !k.Valid() || !k.IsPublic() || k.Use == "enc" {
			continue
		}
		keys = append(keys, k)
	}
	return keys, nil
}
