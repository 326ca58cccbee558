// Command floe is Floe's server and command-line interface.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/floe-lake/floe/internal/cli"
)

func main() {
	// Floe's live heap is small and most garbage is per-request response
	// data, so the default GOGC=100 collects many times a second under load
	// and the collector's pauses and assists dominate tail latency. 400 cuts
	// loadTable p99 by about two thirds (docs/benchmarks.md). GOGC and
	// GOMEMLIMIT from the environment still win.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cli.Root(os.Stdout, os.Stderr, os.Getenv).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "floe:", err)
		os.Exit(1)
	}
}
