package authserver_test

import (
	"testing"

	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

// TestTokenAcceptsTheOriginAsResource: a client that names the server's
// origin (with a trailing slash, as Claude Code does) at the token
// endpoint gets tokens for the server's one resource; another origin is
// invalid_target and spends nothing.
func TestTokenAcceptsTheOriginAsResource(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	code, a := e.code(reg, cliRedirect)
	req := authserver.TokenRequest{Client: creds(reg), GrantType: authserver.GrantAuthorizationCode, Code: code,
		RedirectURI: cliRedirect, CodeVerifier: a.verifier, Resource: "https://other.example/"}
	_, err := e.svc.Token(e.ctx, req)
	wantCode(t, "another origin", err, authserver.ErrInvalidTarget)
	req.Resource = issuer + "/"
	tr, err := e.svc.Token(e.ctx, req)
	if err != nil {
		t.Fatalf("the origin as resource: %v", err)
	}
	e.live(tr.AccessToken)
}
