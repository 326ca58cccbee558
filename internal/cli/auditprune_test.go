package cli

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// TestAuditVerifyAfterPrune: `floe audit verify` on a pruned log starts
// from the signed checkpoint and reports what was pruned; a modified kept
// record is named; a modified checkpoint fails the verify.
func TestAuditVerifyAfterPrune(t *testing.T) {
	dir := t.TempDir()
	f := testkit.Start(t, func(c *app.Config) {
		c.DataDir = dir
		c.AuditRetention = 24 * time.Hour
	})
	data := []string{"--data-dir", dir, "--log-level", "error"}
	ctx := context.Background()
	old := make([]audit.Event, 40)
	for i := range old {
		old[i] = audit.Event{Time: time.Now().Add(-48 * time.Hour), Action: "catalog.loadTable", Principal: "etl", Outcome: audit.OutcomeSuccess}
	}
	if err := f.App.Audit().AppendBatch(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := f.App.Audit().Append(ctx, audit.Event{Action: "catalog.loadTable", Principal: "etl", Outcome: audit.OutcomeSuccess}); err != nil {
		t.Fatal(err)
	}
	res, err := f.App.PruneAudit(ctx)
	if err != nil || res.Pruned < 40 {
		t.Fatalf("prune: %+v, %v", res, err)
	}
	cp := res.Checkpoint
	out, err := run(t, append([]string{"audit", "verify"}, data...)...)
	if err != nil || !strings.Contains(out, "audit log intact") || !strings.Contains(out, "signature valid") ||
		!strings.Contains(out, "pruned: "+itoa(cp.Pruned)+" records") {
		t.Fatalf("verify: %q, %v", out, err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "floe.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A kept record modified: named.
	kept := cp.Seq + 1
	if _, err := db.Exec(`UPDATE audit_events SET principal = 'admin' WHERE seq = ?`, kept); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, append([]string{"audit", "verify"}, data...)...)
	if err == nil || !strings.Contains(err.Error(), "record "+itoa(kept)+" was modified") {
		t.Fatalf("verify after modifying kept record %d: %v", kept, err)
	}
	if _, err := db.Exec(`UPDATE audit_events SET principal = 'etl' WHERE seq = ?`, kept); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, append([]string{"audit", "verify"}, data...)...); err != nil {
		t.Fatalf("verify after restoring: %v", err)
	}
	// The checkpoint modified: its signature no longer verifies.
	if _, err := db.Exec(`UPDATE audit_checkpoint SET body = replace(body, '"pruned":', '"pruned":1')`); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, append([]string{"audit", "verify"}, data...)...)
	if err == nil || !strings.Contains(err.Error(), "checkpoint's signature does not verify") {
		t.Fatalf("verify after modifying the checkpoint: %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
