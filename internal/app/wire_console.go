package app

import (
	"strings"

	"github.com/webcodex/webcodex/internal/console"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

// newConsole builds the Runtime Console over the app's services
// (decision 0038). Its cookie is Secure when the configured public URL is
// https (a TLS tunnel in front of the server).
//
// as is the built-in authorization server whose consent page the console
// serves; nil leaves the page out.
func newConsole(a *App, as *authserver.Service) (*console.Server, error) {
	o := console.Options{
		Auth: a.Auth, Sessions: a.Sessions, Snapshots: newSnapshots(a), Board: newBoard(a), Projects: a.Projects,
		Kernel: a.Kernel, Jobs: a.Jobs, Tasks: a.Tasks, Intents: a.Intents, Logger: a.Log,
		Secure: strings.HasPrefix(strings.ToLower(a.Config.PublicURL), "https://"),
	}
	if a.Evidence != nil {
		o.Journal = a.Evidence
	}
	o.Audit = a.Audit
	if as != nil {
		o.OAuth = as
	}
	o.Streams, o.Verify = a.live.parts(a)
	return console.New(o)
}
