package app

import (
	"context"
	"strings"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/oauth/accesstoken"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

// credentials authenticates a request's bearer credential. An access token
// of the built-in authorization server (wc_oat_…) is its alone when it is
// enabled. A credential shaped as a JWT (three dot-separated parts) is an
// access token of the external issuer when one is configured ([oauth]
// issuer) and is verified by it alone; every other credential (wc_
// tokens, the bootstrap token) is the token service's, which refuses what
// it does not know.
type credentials struct {
	tokens *auth.Service
	oauth  *accesstoken.Verifier
	issued *authserver.Service
}

// Authenticate implements httpserver.Authenticator.
func (c credentials) Authenticate(ctx context.Context, raw string) (auth.Principal, error) {
	if c.issued != nil && authserver.IsAccessToken(raw) {
		return c.issued.Authenticate(ctx, raw)
	}
	if c.oauth == nil || strings.Count(raw, ".") != 2 {
		return c.tokens.Authenticate(ctx, raw)
	}
	a, err := c.oauth.Verify(ctx, raw)
	if err != nil {
		return auth.Principal{}, err
	}
	return a.Principal, nil
}
