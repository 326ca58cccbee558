package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/store/sqlstore"
)

// attackerHash is the chain hash of r as an attacker who read the source
// recomputes it: sha256(prev hash bytes || canonical JSON line || detail).
func attackerHash(t *testing.T, r audit.Record) string {
	t.Helper()
	prev, err := hex.DecodeString(r.PrevHash)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Seq        int64  `json:"seq"`
		Time       string `json:"time"`
		RequestID  string `json:"request_id"`
		Principal  string `json:"principal"`
		ClientAddr string `json:"client_addr"`
		Action     string `json:"action"`
		Resource   string `json:"resource"`
		Outcome    string `json:"outcome"`
	}{r.Seq, r.Time.UTC().Format("2006-01-02T15:04:05.000000Z"), r.RequestID, r.Principal, r.ClientAddr, r.Action, r.Resource, r.Outcome}); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	h.Write(prev)
	h.Write(buf.Bytes())
	h.Write(r.Detail)
	return hex.EncodeToString(h.Sum(nil))
}

// rewriteConsistently changes the principal of record seq to who and
// recomputes the hash of every later record and the head, directly in the
// store, so that the store's own chain is intact again.
func rewriteConsistently(t *testing.T, db *sql.DB, st *sqlstore.Store, pg bool, seq int64, who string) {
	t.Helper()
	ctx := context.Background()
	rs, err := st.AuditRecords(ctx, seq-1, audit.MaxQueryLimit)
	if err != nil || len(rs) == 0 || rs[0].Seq != seq {
		t.Fatalf("records from %d: %d, %v", seq, len(rs), err)
	}
	ph := func(q string) string {
		if !pg {
			return q
		}
		for i := 1; strings.Contains(q, "?"); i++ {
			q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
		}
		return q
	}
	rs[0].Principal = who
	prev := rs[0].PrevHash
	for _, r := range rs {
		r.PrevHash = prev
		r.Hash = attackerHash(t, r)
		if _, err := db.Exec(ph(`UPDATE audit_events SET principal = ?, prev_hash = ?, hash = ? WHERE seq = ?`), r.Principal, r.PrevHash, r.Hash, r.Seq); err != nil {
			t.Fatal(err)
		}
		prev = r.Hash
	}
	if _, err := db.Exec(ph(`UPDATE audit_head SET hash = ? WHERE id = 1`), prev); err != nil {
		t.Fatal(err)
	}
}

// TestAuditVerifyDetectsConsistentRewrite is the attack of issue 15: an
// attacker with write access to the metadata store (not to the warehouse,
// not to the keys) edits one audit record and recomputes every later hash
// and the head. The store's chain is consistent again, but `floe audit
// verify` must still fail, naming the first record from which the history
// is no longer proven by the checkpoints in the warehouse.
func TestAuditVerifyDetectsConsistentRewrite(t *testing.T) {
	type backend struct {
		name  string
		store func(t *testing.T, dir string) string
	}
	for _, b := range []backend{
		{"sqlite", func(t *testing.T, dir string) string { return filepath.Join(dir, "floe.db") }},
		{"postgres", func(t *testing.T, _ string) string { return pgtest.Fresh(t, pgtest.ServerDSN(t)) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			dir := t.TempDir()
			dsn := b.store(t, dir)
			data := []string{"--data-dir", dir, "--store", dsn, "--log-level", "error"}
			ctx := context.Background()
			// Two server runs, each appending events and stopping: every
			// stop leaves a checkpoint of the head in the warehouse.
			var heads []int64
			for run := range 2 {
				cfg := app.Defaults()
				cfg.DataDir, cfg.Store = dir, dsn
				cfg.Listen, cfg.S3Listen, cfg.SQLListen, cfg.AdminListen = "127.0.0.1:0", "127.0.0.1:0", "off", "off"
				cfg.AuditExportInterval = 0
				a, err := app.Open(ctx, cfg, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				if err := a.Start(); err != nil {
					t.Fatal(err)
				}
				evs := make([]audit.Event, 20)
				for i := range evs {
					evs[i] = audit.Event{Principal: "etl", Action: "catalog.loadTable", Resource: fmt.Sprintf("table:floe/crm.t%d_%d", run, i),
						Outcome: audit.OutcomeSuccess, Detail: map[string]any{"token_id": "tok"}}
				}
				if err := a.Audit().AppendBatch(ctx, evs); err != nil {
					t.Fatal(err)
				}
				if err := a.Close(ctx); err != nil {
					t.Fatal(err)
				}
				st, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				h, _, err := st.AuditHead(ctx)
				st.Close()
				if err != nil {
					t.Fatal(err)
				}
				heads = append(heads, h)
			}
			out, err := run(t, append([]string{"audit", "verify"}, data...)...)
			t.Logf("verify before the rewrite:\n%s", out)
			if err != nil || !strings.Contains(out, "audit log intact") || !strings.Contains(out, fmt.Sprintf("proven up to record %d", heads[1])) {
				t.Errorf("verify before the rewrite: %q, %v", out, err)
			}

			st, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			driver := "sqlite"
			if b.name == "postgres" {
				driver = "pgx"
			}
			db, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			victim := heads[0] + 5 // a record of the second run
			rewriteConsistently(t, db, st, b.name == "postgres", victim, "mallory")
			// The store alone no longer shows it: its chain is consistent.
			if _, err := audit.New(st, audit.Options{}).VerifyChain(ctx); err != nil {
				t.Fatalf("the rewrite left the store's chain broken, the attack is not consistent: %v", err)
			}
			first := heads[0] + 1 // the first record after the last checkpoint that still agrees
			rs, err := st.AuditRecords(ctx, first-1, 1)
			if err != nil || len(rs) != 1 {
				t.Fatal(rs, err)
			}
			out, err = run(t, append([]string{"audit", "verify"}, data...)...)
			if err == nil {
				t.Fatalf("floe audit verify passed after a consistent rewrite of record %d:\n%s", victim, out)
			}
			msg := err.Error()
			t.Logf("verify after the rewrite: %v", err)
			for _, want := range []string{
				"tampered",
				fmt.Sprintf("proven up to record %d", heads[0]),
				fmt.Sprintf("not proven from record %d", first),
				rs[0].Time.UTC().Format(time.RFC3339),
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("verify error %q does not say %q", msg, want)
				}
			}
		})
	}
}
