package app_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
)

// BenchmarkOpenFresh opens the app on a fresh data directory (every
// database created and migrated, the keys and the admin credential
// written) and closes it: the start-up a first `webcodex mcp` pays.
func BenchmarkOpenFresh(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for b.Loop() {
		cfg, _ := app.LoadConfig(b.TempDir(), func(string) string { return "" })
		a, err := app.Open(context.Background(), cfg, log)
		if err != nil {
			b.Fatal(err)
		}
		a.Close()
	}
}
