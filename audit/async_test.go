package audit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/floe-lake/floe/audit"
)

// TestAsyncKeepsEveryEventInOrder: concurrent producers, a small queue
// (so producers block), then Close: every event is stored once, each
// producer's events keep their order, and the chain verifies.
func TestAsyncKeepsEveryEventInOrder(t *testing.T) {
	l, db := openLog(t)
	ctx := context.Background()
	a := audit.NewAsync(l, audit.AsyncOptions{Capacity: 8, MaxBatch: 16})
	const producers, each = 4, 250
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				a.Record(ctx, audit.Event{Principal: fmt.Sprint("p", p), Action: "s3.GetObject",
					Resource: "s3://floe/x", Outcome: audit.OutcomeSuccess, Detail: map[string]any{"i": i}})
			}
		}()
	}
	wg.Wait()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := a.Stored(); got != producers*each {
		t.Fatalf("stored %d events, want %d", got, producers*each)
	}
	// After Close, Record still stores (synchronously).
	a.Record(ctx, audit.Event{Principal: "late", Action: "s3.GetObject", Outcome: audit.OutcomeSuccess})
	if err := l.Verify(ctx); err != nil {
		t.Fatalf("verify: %v", err)
	}
	rows, err := db.Query("SELECT principal, detail FROM audit_events ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	last := map[string]int{}
	n := 0
	for rows.Next() {
		var principal, detail string
		if err := rows.Scan(&principal, &detail); err != nil {
			t.Fatal(err)
		}
		n++
		if principal == "late" {
			continue
		}
		var i int
		if _, err := fmt.Sscanf(detail, `{"i":%d}`, &i); err != nil {
			t.Fatalf("detail %s: %v", detail, err)
		}
		if prev, ok := last[principal]; (ok && i != prev+1) || (!ok && i != 0) {
			t.Fatalf("%s: event %d after %d", principal, i, prev)
		}
		last[principal] = i
	}
	if n != producers*each+1 {
		t.Fatalf("log holds %d records, want %d", n, producers*each+1)
	}
}
