package sqlstore

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

func TestRebind(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT a FROM t WHERE x = ? AND y = ?", "SELECT a FROM t WHERE x = $1 AND y = $2"},
		{"INSERT INTO t VALUES (?, '?', ?)", "INSERT INTO t VALUES ($1, '?', $2)"},
		{"SELECT 'it''s ?' , ?", "SELECT 'it''s ?' , $1"},
		{`SELECT "we?ird" FROM t WHERE a = ?`, `SELECT "we?ird" FROM t WHERE a = $1`},
		{"SELECT ? -- why?\n, ?", "SELECT $1 -- why?\n, $2"},
		{"SELECT ? -- trailing?", "SELECT $1 -- trailing?"},
		{"SELECT 'unterminated ?", "SELECT 'unterminated ?"},
		{strings.Repeat("?,", 11) + "?", "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12"},
	}
	for _, tt := range tests {
		if got := postgresDialect.rebind(tt.in); got != tt.want {
			t.Errorf("rebind(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := sqliteDialect.rebind(tt.in); got != tt.in {
			t.Errorf("sqlite rebind changed %q to %q", tt.in, got)
		}
	}
}

func FuzzRebind(f *testing.F) {
	for _, s := range []string{"SELECT ? FROM t WHERE a = '?'", `"?" ? -- ?` + "\n?", "'it''s' ?", "?", "'", "--"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		// The lexer copies everything but placeholders.
		if got := rebindWith(q, func(b *strings.Builder, _ int) { b.WriteByte('?') }); got != q {
			t.Fatalf("rebind with ? for ? changed %q to %q", q, got)
		}
		// Placeholders are numbered 1, 2, ... in order, and each ? either
		// became one or was left in a literal or comment.
		var seen []int
		got := rebindWith(q, func(b *strings.Builder, n int) {
			seen = append(seen, n)
			b.WriteString("$")
		})
		for i, n := range seen {
			if n != i+1 {
				t.Fatalf("placeholders numbered %v", seen)
			}
		}
		if strings.Count(got, "?")+len(seen) != strings.Count(q, "?") {
			t.Fatalf("%q -> %q: %d placeholders, ? count does not add up", q, got, len(seen))
		}
		if len(seen) > 0 && rebindDollar(q) == q {
			t.Fatalf("rebindDollar(%q) left its %d placeholders", q, len(seen))
		}
	})
}

func TestSQLiteDSN(t *testing.T) {
	all := "_pragma=busy_timeout%2810000%29&_pragma=journal_mode%28WAL%29&_pragma=synchronous%28NORMAL%29&_pragma=foreign_keys%281%29&_pragma=temp_store%28MEMORY%29"
	tests := []struct {
		in    string
		write bool
		want  string
	}{
		{"/var/lib/floe/floe.db", true, "/var/lib/floe/floe.db?" + all + "&_txlock=immediate"},
		{"/var/lib/floe/floe.db", false, "/var/lib/floe/floe.db?" + all + "&_query_only=1"},
		{"file:floe.db?cache=private", true, "file:floe.db?cache=private&" + all + "&_txlock=immediate"},
		{"floe.db?_pragma=synchronous(FULL)&_txlock=exclusive", true,
			"floe.db?_pragma=synchronous(FULL)&_txlock=exclusive&_pragma=busy_timeout%2810000%29&_pragma=journal_mode%28WAL%29&_pragma=foreign_keys%281%29&_pragma=temp_store%28MEMORY%29"},
		{"floe.db?_pragma=temp_store(FILE)", false,
			"floe.db?_pragma=temp_store(FILE)&_pragma=busy_timeout%2810000%29&_pragma=journal_mode%28WAL%29&_pragma=synchronous%28NORMAL%29&_pragma=foreign_keys%281%29&_query_only=1"},
	}
	for _, tt := range tests {
		got, err := sqliteDSN(tt.in, tt.write)
		if err != nil || got != tt.want {
			t.Errorf("sqliteDSN(%q, %v) = %q, %v\nwant %q", tt.in, tt.write, got, err, tt.want)
		}
	}
	if _, err := sqliteDSN("x.db?%zz", true); err == nil {
		t.Error("bad query accepted")
	}
}

// TestSQLitePragmas checks that every pooled connection got the pragmas.
func TestSQLitePragmas(t *testing.T) {
	ctx := t.Context()
	s := openForTest(t, filepath.Join(t.TempDir(), "floe.db"), Options{MaxOpenConns: 3})
	type want struct {
		pragma string
		value  string
	}
	common := []want{{"journal_mode", "wal"}, {"synchronous", "1"}, {"foreign_keys", "1"}, {"busy_timeout", "10000"}, {"temp_store", "2"}}
	for _, pool := range []struct {
		name  string
		conns int
		extra []want
		db    func() *sql.DB
	}{
		{"write", 1, []want{{"query_only", "0"}}, func() *sql.DB { return s.wdb }},
		{"read", 3, []want{{"query_only", "1"}}, func() *sql.DB { return s.rdb }},
	} {
		var conns []*sql.Conn
		for range pool.conns {
			c, err := pool.db().Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for i, c := range conns {
			for _, w := range append(slices.Clone(common), pool.extra...) {
				var got string
				if err := c.QueryRowContext(ctx, "PRAGMA "+w.pragma).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != w.value {
					t.Errorf("%s connection %d: %s = %s, want %s", pool.name, i, w.pragma, got, w.value)
				}
			}
		}
		for _, c := range conns {
			c.Close()
		}
	}
	if s.wdb.Stats().MaxOpenConnections != 1 {
		t.Errorf("write pool allows %d connections, want 1", s.wdb.Stats().MaxOpenConnections)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := t.Context()
	if _, err := Open(ctx, "", Options{}); floe.KindOf(err) != floe.Invalid {
		t.Errorf("empty DSN: %v", err)
	}
	if _, err := Open(ctx, "postgres://h:notaport/db", Options{}); err == nil {
		t.Error("bad postgres DSN accepted")
	}
	if _, err := Open(ctx, filepath.Join(t.TempDir(), "x.db")+"?_txlock=sometimes", Options{}); err == nil {
		t.Error("bad sqlite DSN accepted")
	}
	if _, err := Open(ctx, filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"), Options{}); err == nil {
		t.Error("sqlite file in a missing directory accepted")
	}
}

func TestMemoryDSN(t *testing.T) {
	ctx := t.Context()
	s := openForTest(t, ":memory:", Options{})
	if s.Dialect() != DialectSQLite {
		t.Errorf("Dialect = %q", s.Dialect())
	}
	if err := s.PutWarehouse(ctx, catalog.Warehouse{Name: "w", Location: "file:///w"}); err != nil {
		t.Fatal(err)
	}
	if w, err := s.Warehouse(ctx, "w"); err != nil || w.Location != "file:///w" {
		t.Errorf("Warehouse = %+v, %v", w, err)
	}
}

// TestMigrations checks that Open applies each migration once, also when
// several Opens race on a new database, and that reopening works.
func TestMigrations(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			dsn := b.dsn(t)
			ms, err := migrations(map[string]string{"sqlite": DialectSQLite, "postgres": DialectPostgres}[b.name])
			if err != nil || len(ms) == 0 {
				t.Fatalf("migrations: %v, %v", ms, err)
			}
			const n = 4
			stores := make([]*Store, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { stores[i], errs[i] = Open(ctx, dsn, Options{}) })
			}
			wg.Wait()
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("concurrent Open %d: %v", i, errs[i])
				}
				t.Cleanup(func() { stores[i].Close() })
			}
			s := openForTest(t, dsn, Options{})
			if s.Dialect() != b.name {
				t.Errorf("Dialect = %q, want %q", s.Dialect(), b.name)
			}
			var count, latest int
			if err := s.db().QueryRowContext(ctx, "SELECT COUNT(*), MAX(version) FROM schema_migrations").Scan(&count, &latest); err != nil {
				t.Fatal(err)
			}
			if count != len(ms) || latest != ms[len(ms)-1].version {
				t.Errorf("schema_migrations has %d rows up to version %d, want %d up to %d", count, latest, len(ms), ms[len(ms)-1].version)
			}
		})
	}
}

// TestIdempotencySweep checks that saving deletes expired rows now and then.
func TestIdempotencySweep(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var mu sync.Mutex
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
			s := openForTest(t, b.dsn(t), Options{Now: clock, IdempotencyLifetime: time.Hour})
			rows := func() int {
				var n int
				if err := s.db().QueryRowContext(ctx, "SELECT COUNT(*) FROM idempotency").Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			for i := range 5 {
				if err := s.SaveIdempotent(ctx, fmt.Sprint("a", i), 200, "", nil); err != nil {
					t.Fatal(err)
				}
			}
			advance(50 * time.Minute)
			if err := s.SaveIdempotent(ctx, "b", 200, "", nil); err != nil {
				t.Fatal(err)
			}
			if got := rows(); got != 6 {
				t.Errorf("%d rows before anything expired, want 6", got)
			}
			advance(20 * time.Minute) // the a* rows expired 10 minutes ago; b is live
			if err := s.SaveIdempotent(ctx, "c", 200, "", nil); err != nil {
				t.Fatal(err)
			}
			if got := rows(); got != 2 {
				t.Errorf("%d rows after the sweep, want 2 (b and c)", got)
			}
			advance(2 * time.Hour)
			if err := s.SaveIdempotent(ctx, "d", 200, "", nil); err != nil {
				t.Fatal(err)
			}
			if got := rows(); got != 1 {
				t.Errorf("%d rows after the second sweep, want 1", got)
			}
		})
	}
}

// TestSQLiteTwoHandles races two Stores (as two processes would) on one
// SQLite file: BEGIN IMMEDIATE and the busy timeout must keep SQLITE_BUSY
// from reaching callers.
func TestSQLiteTwoHandles(t *testing.T) {
	ctx := t.Context()
	dsn := filepath.Join(t.TempDir(), "floe.db")
	s1 := openForTest(t, dsn, Options{})
	s2 := openForTest(t, dsn, Options{})
	if err := s1.PutWarehouse(ctx, catalog.Warehouse{Name: "w", Location: "file:///w"}); err != nil {
		t.Fatal(err)
	}
	if err := s1.CreateNamespace(ctx, "w", catalog.Namespace{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	id := catalog.Ident{Namespace: catalog.Namespace{"db"}, Name: "t"}
	if err := s2.SwapPointers(ctx, []catalog.Swap{{Warehouse: "w", Ident: id, Kind: catalog.KindTable, New: "0"}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	const goroutines, perWorker = 16, 5
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	for g := range goroutines {
		s := []*Store{s1, s2}[g%2]
		wg.Go(func() {
			for done := 0; done < perWorker; {
				ent, err := s.Entity(ctx, "w", id)
				if err == nil {
					var v int
					fmt.Sscan(ent.MetadataLocation, &v)
					err = s.SwapPointers(ctx, []catalog.Swap{{Warehouse: "w", Ident: id, Kind: catalog.KindTable,
						Old: ent.MetadataLocation, New: fmt.Sprint(v + 1)}})
				}
				if err != nil && floe.KindOf(err) == floe.Conflict {
					continue
				}
				if err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
					return
				}
				done++
			}
		})
	}
	wg.Wait()
	for _, err := range failures {
		t.Errorf("swap failed: %v", err)
	}
	ent, err := s1.Entity(ctx, "w", id)
	if err != nil || ent.MetadataLocation != fmt.Sprint(goroutines*perWorker) {
		t.Errorf("counter = %+v, %v; want %d", ent, err, goroutines*perWorker)
	}
	t.Logf("%d increments through two handles in %v", goroutines*perWorker, time.Since(start))
}
