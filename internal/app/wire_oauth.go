package app

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/webcodex/webcodex/internal/console"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/oauth/clientmeta"
	"github.com/webcodex/webcodex/internal/oauth/oauthdb"
	"github.com/webcodex/webcodex/internal/oauth/oauthpg"
	"github.com/webcodex/webcodex/internal/transport/oauthhttp"
	"github.com/webcodex/webcodex/internal/transport/resourcemeta"
)

// openAuthServerStore opens oauth.db and reads the client metadata CA
// file when the built-in authorization server is enabled ([oauth]
// enabled); the server itself is built with the handler, when the public
// base (its issuer) is known.
func (a *App) openAuthServerStore(ctx context.Context) error {
	if !a.Config.OAuth.Enabled {
		return nil
	}
	if f := a.Config.OAuth.ClientMetadataCAFile; f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("oauth: client_metadata_ca_file: %w", err)
		}
		a.clientMetadataRoots = x509.NewCertPool()
		if !a.clientMetadataRoots.AppendCertsFromPEM(pem) {
			return fmt.Errorf("oauth: client_metadata_ca_file %s holds no PEM certificate", f)
		}
	}
	if a.Stores.db != nil {
		st, err := oauthpg.Open(ctx, a.Stores.db)
		if err != nil {
			return fmt.Errorf("oauth: %w", err)
		}
		a.oauthStore = st
		return nil
	}
	st, err := oauthdb.Open(ctx, filepath.Join(a.Config.DataDir, oauthdb.FileName))
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	a.oauthStore = st
	a.Stores.closers = append([]func() error{st.Close}, a.Stores.closers...)
	return nil
}

// authServer builds the built-in authorization server for resource res:
// its issuer is res's base (issuerOf); nil when it is not enabled. Errors: those of authserver.New.
func (a *App) authServer(res resourcemeta.Resource) (*authserver.Service, error) {
	if a.oauthStore == nil {
		return nil, nil
	}
	if a.authSrv != nil {
		return a.authSrv, nil
	}
	s, err := authserver.New(authserver.Options{
		Issuer: issuerOf(res), Resource: res.URL, Store: a.oauthStore, Logger: a.Log,
		Documents: clientmeta.New(clientmeta.Options{AllowPrivate: a.Config.OAuth.ClientMetadataPrivate, RootCAs: a.clientMetadataRoots}),
	})
	if err != nil {
		return nil, err
	}
	a.authSrv = s
	return s, nil
}

// mountAuthServer mounts the built-in authorization server's endpoints and
// lets the audit's usage report name its clients (the console gets its
// consent page in newConsole).
func (a *App) mountAuthServer(mux *httpserver.Mux, s *authserver.Service) {
	if s == nil {
		return
	}
	a.Audit.NameClients(s.ClientNames)
	if err := oauthhttp.Register(mux, oauthhttp.Options{Server: s, ConsentURL: console.ConsentPath}); err != nil {
		a.Log.Error("oauth: authorization server not mounted", "err", err)
	}
}

// ErrNoOAuth answers an offline OAuth command on a data directory the
// built-in authorization server never ran on.
var ErrNoOAuth = errors.New("the built-in authorization server has never run on this data directory (start it with `webcodex serve --oauth`)")

// OpenOAuthStore opens the deployment's OAuth store for an offline
// command (webcodex oauth clients): the database's oauth schema, or the
// data directory's oauth.db, never creating that file. The caller calls
// the returned close. Errors: ErrNoOAuth when oauth.db does not exist;
// those of opening a database.
func OpenOAuthStore(ctx context.Context, cfg Config) (authserver.Store, func() error, error) {
	if cfg.DatabaseURL != "" {
		return openOneInDatabase(ctx, cfg.DatabaseURL, oauthpg.Open)
	}
	path := filepath.Join(cfg.DataDir, oauthdb.FileName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, ErrNoOAuth
	}
	st, err := oauthdb.Open(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	return st, st.Close, nil
}
