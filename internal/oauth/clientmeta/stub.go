// Package clientmeta: placeholder until the fetcher lands (removed at merge).
package clientmeta

import (
	"context"
	"crypto/x509"
	"net/url"
	"time"
)

type Document struct {
	ClientID, ClientName    string
	RedirectURIs            []string
	TokenEndpointAuthMethod string
	GrantTypes              []string
	ResponseTypes           []string
	ClientURI, LogoURI      string
}

type Fetcher struct{}

func IsClientIDURL(id string) bool {
	u, err := url.Parse(id)
	return err == nil && u.Scheme == "https" && len(u.Path) > 1
}

func (f *Fetcher) Fetch(ctx context.Context, id string) (Document, time.Time, error) {
	return Document{}, time.Time{}, nil
}

type Options struct {
	AllowPrivate bool
	RootCAs      *x509.CertPool
}

func New(o Options) *Fetcher { return &Fetcher{} }
