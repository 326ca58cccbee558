package sqlstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/store/backup"
	"github.com/floe-lake/floe/vend"
)

// populate fills s with rows in most tables, through the store's API where
// it is short and with plain SQL elsewhere (NULLs, booleans, identity
// columns, blobs, times).
func populate(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.PutWarehouse(ctx, catalog.Warehouse{Name: "wh", Location: "file:///w"}))
	must(s.CreateNamespace(ctx, "wh", catalog.Namespace{"db"}, map[string]string{"owner": "ann"}))
	must(s.CreateNamespace(ctx, "wh", catalog.Namespace{"db", "inner"}, nil))
	must(s.CreatePrincipal(ctx, auth.Principal{ID: "p1", Name: "ann", ClientID: "c1", SecretHash: "$argon2id$x",
		Scopes: []string{"catalog"}, Admin: true, CreatedAt: now}))
	must(s.CreatePrincipal(ctx, auth.Principal{ID: "p2", Name: "bob", ClientID: "c2", SecretHash: "$argon2id$y",
		Disabled: true, CreatedAt: now, AllowedCIDRs: []string{"10.0.0.0/8"}}))
	must(s.AddSigningKey(ctx, auth.SigningKey{KID: "k1", PrivatePEM: []byte("sealed\x00\xffkey"), CreatedAt: now}))
	must(s.AddVendKey(ctx, vend.Key{ID: "v1", Secret: []byte{0, 1, 2, 250}, Created: now}))
	log := audit.New(s, audit.Options{Now: func() time.Time { return now }})
	for i := range 5 {
		_, err := log.Append(ctx, audit.Event{Principal: "ann", Action: "test", Resource: fmt.Sprint("r", i),
			Outcome: audit.OutcomeSuccess, Detail: map[string]any{"i": i, "s": "é\n\"x\""}})
		must(err)
	}
	// Enough rows for multi-row INSERT batches and a remainder.
	batch := make([]audit.Event, 450)
	for i := range batch {
		batch[i] = audit.Event{Principal: "bob", Action: "bulk", Resource: fmt.Sprint("b", i), Outcome: audit.OutcomeSuccess}
	}
	must(log.AppendBatch(ctx, batch))
	c := s.read()
	w := s.wdb
	for i := range 3 {
		_, err := w.ExecContext(ctx, s.d.rebind(`INSERT INTO entities (warehouse, namespace, name, kind, metadata_location, updated_at, location)
			VALUES (?, ?, ?, 'table', ?, ?, ?)`), "wh", "db", fmt.Sprint("t", i), fmt.Sprintf("file:///w/db/t%d/metadata/00001.json", i),
			s.d.timeArg(now.Add(time.Duration(i)*time.Second)), nil)
		must(err)
	}
	_, err := w.ExecContext(ctx, s.d.rebind(`INSERT INTO maintenance_runs (warehouse, namespace, table_name, job, tick, node, token, started, finished, outcome)
		VALUES ('wh', 'db', 't0', 'compact', 7, 'n1', 3, ?, NULL, 'running')`), s.d.timeArg(now))
	must(err)
	_, err = w.ExecContext(ctx, s.d.rebind(`INSERT INTO share_recipients (id, name, name_key, owner, created_at, expires_at)
		VALUES ('r1', 'Acme', 'acme', 'ann', ?, NULL)`), s.d.timeArg(now))
	must(err)
	_ = c
}

// dump returns every table's rows of s, as sorted JSON lines, and the header.
func dump(t *testing.T, s *Store) (backup.Header, map[string][]string) {
	t.Helper()
	var buf bytes.Buffer
	h, _, err := s.Backup(context.Background(), &buf, BackupOptions{FloeVersion: "test"})
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	return h, readDump(t, buf.Bytes())
}

func readDump(t *testing.T, b []byte) map[string][]string {
	t.Helper()
	rd, err := backup.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for {
		tb, err := rd.NextTable()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out[tb.Name] = []string{}
		for {
			row, err := rd.NextRow()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			j, _ := json.Marshal(row)
			out[tb.Name] = append(out[tb.Name], string(j))
		}
		slices.Sort(out[tb.Name])
	}
	return out
}

func TestBackupRoundTrip(t *testing.T) {
	ctx := context.Background()
	bs := backends()
	for _, from := range bs {
		for _, to := range bs {
			t.Run(from.name+"_to_"+to.name, func(t *testing.T) {
				src := openForTest(t, from.dsn(t), Options{})
				populate(t, src)
				var buf bytes.Buffer
				h, tr, err := src.Backup(ctx, &buf, BackupOptions{FloeVersion: "test"})
				if err != nil {
					t.Fatal(err)
				}
				if h.AuditHead.Seq != 455 || h.Dialect != from.name || h.SchemaVersion < 19 {
					t.Fatalf("header %+v", h)
				}
				if tr.Rows["entities"] != 3 || tr.Rows["audit_events"] != 455 || tr.Rows["maintenance_runs"] != 1 {
					t.Fatalf("trailer rows %v", tr.Rows)
				}
				want := readDump(t, buf.Bytes())
				dst := openForTest(t, to.dsn(t), Options{})
				res, err := dst.Restore(ctx, bytes.NewReader(buf.Bytes()), RestoreOptions{})
				if err != nil {
					t.Fatalf("Restore: %v", err)
				}
				if res.Rows == 0 || res.Tables != len(want) {
					t.Fatalf("restore result %+v, want %d tables", res, len(want))
				}
				h2, got := dump(t, dst)
				if h2.AuditHead != h.AuditHead {
					t.Fatalf("audit head %+v, want %+v", h2.AuditHead, h.AuditHead)
				}
				for name, rows := range want {
					if !slices.Equal(got[name], rows) {
						t.Errorf("table %s:\n got %v\nwant %v", name, got[name], rows)
					}
				}
				if len(got) != len(want) {
					t.Errorf("%d tables restored, want %d", len(got), len(want))
				}
				if err := audit.New(dst, audit.Options{}).Verify(ctx); err != nil {
					t.Fatalf("audit chain after restore: %v", err)
				}
				// The restored store works: reads and writes, including
				// the identity column and the audit chain.
				if _, err := dst.Entity(ctx, "wh", catalog.Ident{Namespace: catalog.Namespace{"db"}, Name: "t1"}); err != nil {
					t.Fatal(err)
				}
				if _, err := audit.New(dst, audit.Options{}).Append(ctx, audit.Event{Action: "after", Outcome: audit.OutcomeSuccess}); err != nil {
					t.Fatal(err)
				}
				if _, err := dst.wdb.ExecContext(ctx, `INSERT INTO maintenance_runs (warehouse, namespace, table_name, job, tick, node, token, started, outcome)
					VALUES ('wh', 'db', 't1', 'compact', 8, 'n1', 4, '2026-01-01T00:00:00.000000Z', 'running')`); err != nil {
					t.Fatalf("insert after restore: %v", err)
				}
				// A second restore without force is refused; with force it
				// replaces the store.
				_, err = dst.Restore(ctx, bytes.NewReader(buf.Bytes()), RestoreOptions{})
				if floe.KindOf(err) != floe.Conflict || !strings.Contains(err.Error(), "not empty") {
					t.Fatalf("restore into a non-empty store: %v", err)
				}
				if _, err := dst.Restore(ctx, bytes.NewReader(buf.Bytes()), RestoreOptions{Force: true}); err != nil {
					t.Fatalf("forced restore: %v", err)
				}
				if _, got := dump(t, dst); len(got["maintenance_runs"]) != 1 || len(got["audit_events"]) != 455 {
					t.Fatalf("forced restore kept rows: %v", got["maintenance_runs"])
				}
			})
		}
	}
}

// gz compresses b.
func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRestoreRefusesDamagedFiles(t *testing.T) {
	ctx := context.Background()
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			src := openForTest(t, be.dsn(t), Options{})
			populate(t, src)
			var buf bytes.Buffer
			if _, _, err := src.Backup(ctx, &buf, BackupOptions{}); err != nil {
				t.Fatal(err)
			}
			good := buf.Bytes()
			plain := gunzip(t, good)
			lines := bytes.SplitAfter(plain, []byte("\n"))
			lines = lines[:len(lines)-1] // the empty string after the last \n
			body := bytes.Join(lines[:len(lines)-1], nil)
			trailer := lines[len(lines)-1]
			header := lines[0]
			cases := []struct {
				name, data, want string
			}{
				{"empty", "", "not a gzip"},
				{"not gzip", "hello", "not a gzip"},
				{"truncated gzip", string(good[:len(good)/2]), "truncated"},
				{"truncated body", string(gz(body)), "truncated"},
				{"row dropped", string(gz(append(bytes.Join(slices.Delete(slices.Clone(lines[:len(lines)-1]), 3, 4), nil), trailer...))), "SHA-256 mismatch"},
				{"value changed", string(gz(bytes.Replace(plain, []byte(`"wh"`), []byte(`"WH"`), 1))), "SHA-256 mismatch"},
				{"trailer changed", string(gz(append(body, bytes.Replace(trailer, []byte(`"entities":3`), []byte(`"entities":4`), 1)...))), "the trailer says 4"},
				{"data after trailer", string(gz(append(slices.Clone(plain), []byte("{}\n")...))), "after the trailer"},
				{"newer format", string(gz(bytes.Replace(plain, []byte(`"version":1`), []byte(`"version":9`), 1))), "format version 9"},
				{"not a backup", string(gz([]byte("{\"x\":1}\n"))), "not a backup header"},
				{"bad table name", string(gz(bytes.Replace(plain, []byte(`"name":"entities"`), []byte(`"name":"entities; DROP"`), 1))), "not an identifier"},
				{"header only", string(gz(header)), "truncated"},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					dst := openForTest(t, be.dsn(t), Options{})
					_, err := dst.Restore(ctx, strings.NewReader(tc.data), RestoreOptions{})
					if err == nil || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("Restore: %v, want an error with %q", err, tc.want)
					}
					if floe.KindOf(err) != floe.Invalid {
						t.Fatalf("kind %v, want Invalid: %v", floe.KindOf(err), err)
					}
					// Nothing was written: the store is still empty
					// (and a good restore works).
					if _, got := dump(t, dst); len(got["principals"]) != 0 || len(got["audit_events"]) != 0 {
						t.Fatalf("a refused restore wrote rows: %v", got["principals"])
					}
					if _, err := dst.Restore(ctx, bytes.NewReader(good), RestoreOptions{}); err != nil {
						t.Fatalf("good restore after a refused one: %v", err)
					}
				})
			}
		})
	}
}

// TestRestoreNewerSchema refuses a backup whose schema is newer than the
// binary's migrations.
func TestRestoreNewerSchema(t *testing.T) {
	ctx := context.Background()
	src := openForTest(t, backends()[0].dsn(t), Options{})
	var buf bytes.Buffer
	h, _, err := src.Backup(ctx, &buf, BackupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plain := gunzip(t, buf.Bytes())
	// Rewrite the header and re-hash: a well-formed file from the future.
	var w bytes.Buffer
	h.SchemaVersion = 999
	bw, err := backup.NewWriter(&w, h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = plain
	dst := openForTest(t, backends()[0].dsn(t), Options{})
	_, err = dst.Restore(ctx, &w, RestoreOptions{})
	if floe.KindOf(err) != floe.Invalid || !strings.Contains(err.Error(), "schema version 999 is newer") {
		t.Fatalf("Restore: %v", err)
	}
}
