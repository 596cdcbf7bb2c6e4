package app

import (
	"strings"

	"github.com/webcodex/webcodex/internal/console"
)

// newConsole builds the Runtime Console over the app's services
// (decision 0038). Its cookie is Secure when the configured public URL is
// https (a TLS tunnel in front of the server).
func newConsole(a *App) (*console.Server, error) {
	o := console.Options{
		Auth: a.Auth, Sessions: a.Sessions, Snapshots: newSnapshots(a), Board: newBoard(a), Projects: a.Projects,
		Kernel: a.Kernel, Jobs: a.Jobs, Logger: a.Log,
		Secure: strings.HasPrefix(strings.ToLower(a.Config.PublicURL), "https://"),
	}
	if a.Evidence != nil {
		o.Journal = a.Evidence
	}
	o.Audit = a.Audit
	o.Streams, o.Verify = a.live.parts(a)
	return console.New(o)
}
