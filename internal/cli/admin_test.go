package cli

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
)

// TestAuditVerifyAndRotate: the audit chain of a data directory verifies,
// tail shows the records, a flipped byte is detected, and key rotation
// prints a new key id.
func TestAuditVerifyAndRotate(t *testing.T) {
	dir := t.TempDir()
	data := []string{"--data-dir", dir, "--log-level", "error"}
	if _, err := run(t, append([]string{"principal", "create", "etl"}, data...)...); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, append([]string{"signing-key", "rotate"}, data...)...)
	if err != nil || !strings.HasPrefix(out, "new signing key: ") {
		t.Fatalf("rotate: %q, %v", out, err)
	}
	// Put two records in the log.
	ctx := context.Background()
	cfg := app.Defaults()
	cfg.DataDir = dir
	a, err := app.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, outcome := range []string{"success", "failure"} {
		if _, err := a.Audit().Append(ctx, audit.Event{Principal: "etl", Action: "test.event", Resource: "principal:etl", Outcome: outcome}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}

	out, err = run(t, append([]string{"audit", "verify"}, data...)...)
	if err != nil || !strings.Contains(out, "audit log intact") {
		t.Fatalf("verify: %q, %v", out, err)
	}
	out, err = run(t, append([]string{"audit", "tail", "-n", "5"}, data...)...)
	if err != nil || !strings.Contains(out, "SEQ") || !strings.Contains(out, "test.event") {
		t.Fatalf("tail: %q, %v", out, err)
	}
	// Tamper with the stored record: verification must fail.
	db, err := sql.Open("sqlite", filepath.Join(dir, "floe.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE audit_events SET outcome = 'denied' WHERE action = 'test.event' AND outcome = 'success'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := run(t, append([]string{"audit", "verify"}, data...)...); err == nil || !strings.Contains(err.Error(), "tampered") {
		t.Fatalf("verify after tampering: %v", err)
	}
}
