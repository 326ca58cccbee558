package audit_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/store/sqlstore"
)

func openLog(t *testing.T) (*audit.Log, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "floe.db")
	st, err := sqlstore.Open(context.Background(), path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db, err := sql.Open("sqlite", path) // to tamper with, behind the store's back
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return audit.New(st, audit.Options{Now: func() time.Time { return now }}), db
}

func fill(t *testing.T, l *audit.Log, n int) {
	t.Helper()
	for i := range n {
		_, err := l.Append(context.Background(), audit.Event{RequestID: fmt.Sprint("r", i), Principal: "etl",
			ClientAddr: "127.0.0.1", Action: "oauth.token", Resource: "principal:etl", Outcome: audit.OutcomeSuccess,
			Detail: map[string]any{"grant_type": "client_credentials", "n": i, "nested": map[string]any{"z": 1, "a": []int{1, 2}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestAppendVerify(t *testing.T) {
	l, db := openLog(t)
	ctx := context.Background()
	if err := l.Verify(ctx); err != nil {
		t.Fatalf("empty log: %v", err)
	}
	fill(t, l, 5)
	if err := l.Verify(ctx); err != nil {
		t.Fatalf("intact log: %v", err)
	}
	var detail, hash, prev string
	if err := db.QueryRow("SELECT detail, hash, prev_hash FROM audit_events WHERE seq = 2").Scan(&detail, &hash, &prev); err != nil {
		t.Fatal(err)
	}
	if detail != `{"grant_type":"client_credentials","n":1,"nested":{"a":[1,2],"z":1}}` || len(hash) != 64 || len(prev) != 64 {
		t.Errorf("record 2: detail %s hash %s prev %s", detail, hash, prev)
	}
	// Concurrent appends keep one valid chain, and a verify running while
	// they commit does not take a fresh record for tampering.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); fill(t, l, 3) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for verifying := true; verifying; {
		select {
		case <-done:
			verifying = false
		default:
		}
		if err := l.Verify(ctx); err != nil {
			t.Fatalf("during concurrent appends: %v", err)
		}
	}
	if err := l.Verify(ctx); err != nil {
		t.Fatalf("after concurrent appends: %v", err)
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	tests := []struct {
		name, sql, want string
	}{
		{"modified outcome", "UPDATE audit_events SET outcome = 'failure' WHERE seq = 3", "record 3 was modified"},
		{"modified principal", "UPDATE audit_events SET principal = 'admin' WHERE seq = 1", "record 1 was modified"},
		{"modified detail whitespace", `UPDATE audit_events SET detail = replace(detail, ':', ': ') WHERE seq = 2`, "record 2 was modified"},
		{"modified time", "UPDATE audit_events SET time = '2027-01-01T00:00:00.000000Z' WHERE seq = 4", "record 4 was modified"},
		{"changed hash", "UPDATE audit_events SET hash = 'ab' WHERE seq = 2", "record 2 was modified"},
		{"changed link", "UPDATE audit_events SET prev_hash = '' WHERE seq = 2", "does not link"},
		{"deleted middle", "DELETE FROM audit_events WHERE seq = 3", "record 3 is missing"},
		{"deleted first", "DELETE FROM audit_events WHERE seq = 1", "record 1 is missing"},
		{"deleted last", "DELETE FROM audit_events WHERE seq = 5", "ends at record 4 but 5"},
		{"deleted all", "DELETE FROM audit_events", "ends at record 0 but 5"},
		{"broken detail", "UPDATE audit_events SET detail = '[1]' WHERE seq = 2", "detail is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, db := openLog(t)
			fill(t, l, 5)
			if _, err := db.Exec(tt.sql); err != nil {
				t.Fatal(err)
			}
			err := l.Verify(context.Background())
			if !errors.Is(err, audit.ErrTampered) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Verify = %v, want ErrTampered with %q", err, tt.want)
			}
		})
	}
}

func TestAppendErrors(t *testing.T) {
	l, _ := openLog(t)
	_, err := l.Append(context.Background(), audit.Event{Action: "x", Detail: map[string]any{"f": func() {}}})
	if err == nil {
		t.Fatal("unencodable detail accepted")
	}
	r, err := l.Append(context.Background(), audit.Event{Action: "x"})
	if err != nil || string(r.Detail) != "{}" || r.Seq != 1 || r.PrevHash != "" {
		t.Fatalf("Append = %+v, %v", r, err)
	}
}

// TestAppendBatchSizes: batches of every size around the store's INSERT
// chunk sizes (64, 16, 4, 1 records) are stored whole, in order, chained.
func TestAppendBatchSizes(t *testing.T) {
	l, db := openLog(t)
	ctx := context.Background()
	total := 0
	for _, n := range []int{1, 2, 3, 4, 5, 15, 16, 17, 20, 63, 64, 65, 84, 129, 150} {
		events := make([]audit.Event, n)
		for i := range events {
			events[i] = audit.Event{RequestID: fmt.Sprint("b", n, "-", i), Principal: "etl", Action: "catalog.loadTable",
				Resource: "table:w/a.t", Outcome: audit.OutcomeSuccess, Detail: map[string]any{"i": i}}
		}
		if err := l.AppendBatch(ctx, events); err != nil {
			t.Fatalf("batch of %d: %v", n, err)
		}
		total += n
	}
	if err := l.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	var count, maxSeq int
	if err := db.QueryRow("SELECT COUNT(*), MAX(seq) FROM audit_events").Scan(&count, &maxSeq); err != nil {
		t.Fatal(err)
	}
	if count != total || maxSeq != total {
		t.Errorf("%d records up to seq %d, want %d", count, maxSeq, total)
	}
	var rid string
	if err := db.QueryRow("SELECT request_id FROM audit_events WHERE seq = ?", total).Scan(&rid); err != nil || rid != "b150-149" {
		t.Errorf("last record's request id %q, %v", rid, err)
	}
}
