package mcpserver

import (
	"context"
	"errors"
	"net/http"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/webcodex/webcodex/internal/auth"
)

// principalFromRequest hands the principal that the HTTP stack already
// authenticated (see httpserver.Mux.Authenticated) to the go-sdk, which
// passes it to tool handlers in RequestExtra.TokenInfo. It never looks at
// the raw credential itself.
func principalFromRequest(_ context.Context, _ string, r *http.Request) (*sdkauth.TokenInfo, error) {
	p, ok := auth.PrincipalFrom(r.Context())
	if !ok {
		return nil, errors.Join(sdkauth.ErrInvalidToken, errors.New("unauthenticated"))
	}
	scopes := make([]string, len(p.Scopes))
	for i, sc := range p.Scopes {
		scopes[i] = string(sc)
	}
	return &sdkauth.TokenInfo{Scopes: scopes, UserID: string(p.Kind) + ":" + p.ID, Extra: map[string]any{principalKey: p}}, nil
}
