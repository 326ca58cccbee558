package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// TestAuditRetentionBoundsTheStore appends audit events for several
// retention periods at a steady rate and shows that the store keeps only
// about a retention's worth of them (the row count stays under a bound
// while appends go on), that each prune batch is bounded, and that the
// chain verifies throughout, starting from the signed checkpoint.
func TestAuditRetentionBoundsTheStore(t *testing.T) {
	const (
		retention = 600 * time.Millisecond
		interval  = 100 * time.Millisecond
		perTick   = 50 // events every 10ms: 5,000 a second
		batch     = 200
	)
	f := testkit.Start(t, func(c *app.Config) {
		c.AuditRetention, c.AuditPruneInterval, c.AuditPruneBatch = retention, interval, batch
	})
	ctx := context.Background()
	st, lg := f.App.Store(), f.App.Audit()
	// Bound: a retention's worth, plus what arrives in a prune interval and
	// the pause of a backlog's batches, with generous slack for a loaded
	// machine; without pruning the count passes it within the first second.
	rate := perTick * 100 // per second
	bound := int64(float64(rate) * (retention + 4*interval + 400*time.Millisecond).Seconds())
	var total, maxRows int64
	stop := time.Now().Add(3 * time.Second)
	for time.Now().Before(stop) {
		events := make([]audit.Event, perTick)
		for i := range events {
			events[i] = audit.Event{RequestID: fmt.Sprint("r", total+int64(i)), Principal: "etl", Action: "catalog.loadTable",
				Resource: "table:floe/a.t", Outcome: audit.OutcomeSuccess}
		}
		if err := lg.AppendBatch(ctx, events); err != nil {
			t.Fatal(err)
		}
		total += perTick
		n, err := st.AuditCount(ctx)
		if err != nil {
			t.Fatal(err)
		}
		maxRows = max(maxRows, n)
		if n > bound {
			t.Fatalf("%d audit rows in the store after %d appends, bound %d", n, total, bound)
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, err := lg.VerifyChain(ctx)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if res.Checkpoint == nil || res.Checkpoint.Pruned == 0 || res.Checkpoint.Pruned+res.Records != total {
		t.Fatalf("after %d appends: %+v (checkpoint %+v)", total, res, res.Checkpoint)
	}
	t.Logf("%d events appended, at most %d rows kept (bound %d), %d pruned", total, maxRows, bound, res.Checkpoint.Pruned)
}

// TestAuditRetentionOff: with retention 0 nothing is pruned.
func TestAuditRetentionOff(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) {
		c.AuditRetention, c.AuditPruneInterval = 0, 100*time.Millisecond
	})
	ctx := context.Background()
	for range 3 {
		if _, err := f.App.Audit().Append(ctx, audit.Event{Action: "x", Time: time.Now().Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if res, err := f.App.PruneAudit(ctx); err != nil || res.Pruned != 0 {
		t.Fatalf("PruneAudit with retention 0 = %+v, %v", res, err)
	}
	if n, err := f.App.Store().AuditCount(ctx); err != nil || n < 3 {
		t.Fatalf("%d rows, %v", n, err)
	}
}

// TestAuditPruneOneNodeAtATime: nodes sharing a store prune under one lease;
// concurrent runs never fail or break the chain.
func TestAuditPruneOneNodeAtATime(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) { c.AuditRetention, c.AuditPruneBatch = time.Hour, 7 })
	ctx := context.Background()
	old := time.Now().Add(-2 * time.Hour)
	events := make([]audit.Event, 100)
	for i := range events {
		events[i] = audit.Event{Action: "x", Time: old}
	}
	if err := f.App.Audit().AppendBatch(ctx, events); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := f.App.PruneAudit(ctx); err != nil && !strings.Contains(err.Error(), "pruned to record") {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	res, err := f.App.Audit().VerifyChain(ctx)
	if err != nil || res.Checkpoint == nil || res.Checkpoint.Pruned < 100 {
		t.Fatalf("verify: %+v, %v", res, err)
	}
}

func TestAuditRetentionConfig(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"FLOE_AUDIT_RETENTION": "-1h"}, "audit_retention"},
		{map[string]string{"FLOE_AUDIT_PRUNE_INTERVAL": "1ms"}, "audit_prune_interval"},
		{map[string]string{"FLOE_AUDIT_PRUNE_BATCH": "0"}, "audit_prune_batch"},
		{map[string]string{"FLOE_AUDIT_PRUNE_BATCH": "100001"}, "audit_prune_batch"},
		{map[string]string{"FLOE_AUDIT_RETENTION": "0", "FLOE_AUDIT_PRUNE_INTERVAL": "1ms"}, ""},
		{map[string]string{"FLOE_AUDIT_RETENTION": "48h", "FLOE_AUDIT_PRUNE_BATCH": "10"}, ""},
	}
	for _, tt := range tests {
		c := app.Defaults()
		c.DataDir = t.TempDir()
		err := c.LoadEnv(func(k string) string { return tt.env[k] })
		if err == nil {
			err = c.Finish()
		}
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%v: %v, want %q", tt.env, err, tt.want)
		}
	}
	if d := app.Defaults(); d.AuditRetention != 30*24*time.Hour || d.AuditPruneBatch != audit.DefaultPruneBatch {
		t.Errorf("defaults: retention %s, batch %d", d.AuditRetention, d.AuditPruneBatch)
	}
}
