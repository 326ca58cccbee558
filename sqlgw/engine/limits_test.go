package engine_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/lake"
)

// openFDs counts this process's open descriptors (the server runs in it);
// -1 when it cannot.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// appendManyFiles commits n one-row data files to tbl in one snapshot.
func appendManyFiles(t testing.TB, tbl *table.Table, n int) *table.Table {
	t.Helper()
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	var recs []arrow.RecordBatch
	for _, p := range people(n) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
		b.Field(0).(*array.Int64Builder).Append(p.id)
		b.Field(1).(*array.StringBuilder).Append(p.name)
		b.Field(2).(*array.StringBuilder).Append(p.region)
		b.Field(3).(*array.StringBuilder).Append(p.ssn)
		b.Field(4).(*array.Float64Builder).Append(p.salary)
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	rdr, err := array.NewRecordReader(asc, recs)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	for _, r := range recs {
		r.Release()
	}
	ctx := context.Background()
	files, err := lake.WriteDataFiles(ctx, tbl, rdr, table.WithTargetFileSize(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != n {
		t.Fatalf("wrote %d files, want %d", len(files), n)
	}
	out, err := lake.AppendFiles(ctx, tbl, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFileDescriptorsBounded is the attack of one count(*) over a
// 3,000-file table: the in-memory copies of the (encrypted) files are
// bounded by count, and once the query ends the process holds no more
// descriptors than before plus that bound, even while the client keeps
// the statement prepared.
func TestFileDescriptorsBounded(t *testing.T) {
	const files, bound = 3000, 64
	e := newEnv(t, func(c *app.Config) { c.SQLCacheFiles = bound })
	tbl := e.createPeople(t, "fd", "many")
	start := time.Now()
	appendManyFiles(t, tbl, files)
	t.Logf("wrote %d files in %v", files, time.Since(start))

	c := e.admin(t)
	mustRows(t, c, "SELECT 1")
	base := openFDs()
	if base < 0 {
		t.Fatal("cannot count descriptors in /proc/self/fd")
	}
	var peak atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			if n := int64(openFDs()); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	for range 2 { // the second run reuses the prepared statement
		rows := mustRows(t, c, "SELECT count(*) FROM fd.many")
		if got := rows[0][0].(int64); got != files {
			t.Fatalf("count(*) = %d, want %d", got, files)
		}
	}
	close(stop)
	<-done
	idle := openFDs()
	t.Logf("descriptors: %d before, peak %d during, %d after (bound %d)", base, peak.Load(), idle, bound)
	if idle > base+bound+8 {
		t.Errorf("%d descriptors open after the query, want at most %d + %d", idle, base, bound)
	}
	if _, n := e.f.App.SQLEngine().CacheStats(); n > bound {
		t.Errorf("%d files cached, want at most %d", n, bound)
	}
}

// TestStatementTimeoutEnforced is the runaway-CTE attack: SET
// statement_timeout is enforced with 57014, and the server maximum
// (sql_max_statement_timeout) applies without it and above it.
func TestStatementTimeoutEnforced(t *testing.T) {
	const runaway = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r) SELECT count(*) FROM r"
	e := newEnv(t, func(c *app.Config) { c.SQLMaxStatementTimeout = 500 * time.Millisecond })
	for _, tc := range []struct {
		set      string
		min, max time.Duration
	}{
		{set: "100ms", min: 90 * time.Millisecond, max: 400 * time.Millisecond},
		{set: "", min: 450 * time.Millisecond, max: 5 * time.Second},
		{set: "1h", min: 450 * time.Millisecond, max: 5 * time.Second},
	} {
		c := e.admin(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if tc.set != "" {
			if _, err := c.Exec(ctx, "SET statement_timeout = '"+tc.set+"'"); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		_, err := c.Exec(ctx, runaway)
		d := time.Since(start)
		cancel()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" || !strings.Contains(pe.Message, "statement timeout") {
			t.Fatalf("statement_timeout %q: %v after %v, want 57014 canceling statement due to statement timeout", tc.set, err, d)
		}
		if d < tc.min || d > tc.max {
			t.Errorf("statement_timeout %q: canceled after %v, want %v to %v", tc.set, d, tc.min, tc.max)
		}
		if rows := mustRows(t, c, "SELECT 1"); len(rows) != 1 {
			t.Errorf("the session does not go on: %v", rows)
		}
	}
}

// TestStatementTimeoutHTTP: the server maximum bounds the HTTP query API
// (POST /api/v1/query) too.
func TestStatementTimeoutHTTP(t *testing.T) {
	const runaway = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r) SELECT count(*) FROM r"
	e := newEnv(t, func(c *app.Config) { c.SQLMaxStatementTimeout = 300 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", e.f.URL+"/api/v1/query", strings.NewReader(runaway))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+e.f.Token(t))
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("after %v: %v", time.Since(start), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	d := time.Since(start)
	if resp.StatusCode == http.StatusOK || !strings.Contains(string(body), "statement timeout") {
		t.Fatalf("after %v: %d %s, want an error canceling statement due to statement timeout", d, resp.StatusCode, body)
	}
	if d > 5*time.Second {
		t.Errorf("canceled after %v", d)
	}
}
