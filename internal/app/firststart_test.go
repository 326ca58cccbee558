package app

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
)

// TestBootstrapOnceAcrossNodes: nodes starting at once on one store create
// one admin between them; exactly one prints a credential, and none fails
// to start because another won the race. An App that is only opened (an
// offline command) creates no admin.
func TestBootstrapOnceAcrossNodes(t *testing.T) {
	dir := t.TempDir()
	cfg := Defaults()
	cfg.DataDir = dir
	cfg.Listen, cfg.S3Listen, cfg.SQLListen, cfg.AdminListen = "127.0.0.1:0", "off", "off", "off"
	cfg.Maintenance, cfg.AuditExportInterval = false, 0
	if dsn := os.Getenv("FLOE_TEST_STORE"); dsn != "" {
		cfg.Store = dsn
	}
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	// Opening alone (as floe principal list does) bootstraps nothing.
	a, err := Open(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if ps, err := a.Store().ListPrincipals(ctx); err != nil || len(ps) != 0 || a.Bootstrap != nil {
		t.Fatalf("Open created principals: %v %v", ps, err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	const nodes = 4
	apps := make([]*App, nodes)
	for i := range apps {
		if apps[i], err = Open(ctx, cfg, log); err != nil {
			t.Fatal(err)
		}
		defer apps[i].Close(ctx)
	}
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i, a := range apps {
		wg.Go(func() { errs[i] = a.Start() })
	}
	wg.Wait()
	printed := 0
	for i, a := range apps {
		if errs[i] != nil {
			t.Errorf("node %d: %v", i, errs[i])
		}
		if a.Bootstrap != nil {
			printed++
		}
	}
	ps, err := apps[0].Store().ListPrincipals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || !ps[0].Admin || printed != 1 {
		t.Fatalf("%d principals, %d credentials printed; want one admin, printed once", len(ps), printed)
	}
}
