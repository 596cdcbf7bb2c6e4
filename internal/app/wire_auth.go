package app

import (
	"log/slog"

	"github.com/webcodex/webcodex/internal/auth"
)

// newAuth is the server's auth service: its bootstrap credential is
// WEBCODEX_TOKEN of the serving process's environment.
func newAuth(s *Stores, cfg Config, log *slog.Logger) (*auth.Service, error) {
	return authService(s, auth.Options{Bootstrap: cfg.BootstrapToken, Logger: log})
}

// authService is an auth service over s's auth.db with the server's tool
// profile check and console store, and o's credential and logger.
func authService(s *Stores, o auth.Options) (*auth.Service, error) {
	o.CheckTools, o.Consoles = CheckToolProfile, s.Auth
	return auth.NewService(s.Auth, o)
}
