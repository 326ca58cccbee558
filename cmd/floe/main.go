// Command floe is Floe's server and command-line interface.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/floe-lake/floe/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cli.Root(os.Stdout, os.Stderr, os.Getenv).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "floe:", err)
		var ee *cli.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.Code)
		}
		os.Exit(1)
	}
}
