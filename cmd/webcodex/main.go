// Command webcodex is the WebCodex server and its operator CLI.
//
// Run `webcodex serve --project .` to serve the current directory to AI
// coding agents; see `webcodex --help` for every command.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/webcodex/webcodex/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	if err := root.ExecuteContext(ctx); err != nil {
		if errors.Is(err, errAttention) {
			os.Exit(ExitAttention) // what is waiting was printed
		}
		fmt.Fprintln(os.Stderr, "webcodex:", err)
		var ce *app.ConfigError
		if errors.As(err, &ce) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
