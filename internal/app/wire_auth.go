package app

import (
	"log/slog"

	"github.com/webcodex/webcodex/internal/auth"
)

func newAuth(s *Stores, cfg Config, log *slog.Logger) (*auth.Service, error) {
	return auth.NewService(s.Auth, auth.Options{Bootstrap: cfg.BootstrapToken, Logger: log, CheckTools: CheckToolProfile, Consoles: s.Auth})
}
