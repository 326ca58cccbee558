package engine

import (
	"context"
	"testing"

	"github.com/duckdb/duckdb-go/v2"
	lru "github.com/hashicorp/golang-lru/v2"
)

// TestUniqueIdentifier: the check that lets differential privacy skip its
// per-identifier row bound answers true only when every row has its own
// identifier and none is NULL (duplicates, two NULLs, even one NULL:
// false, so the bound runs); it counts once per table snapshot and
// identifier (a second call with the same key answers from the cache,
// even though the view now has duplicates: snapshots do not change); a
// filtered view is never unique; an empty table is. The cache holds at
// most its bound (2 here): past it the oldest key is counted again.
func TestUniqueIdentifier(t *testing.T) {
	ctx := context.Background()
	c, err := duckdb.NewConnector("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dc, err := c.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	cache, err := lru.New[string, bool](2)
	if err != nil {
		t.Fatal(err)
	}
	ss := &session{e: &Engine{unique: cache}, conn: dc.(*duckdb.Conn)}
	const (
		uniq  = "SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, 'c')) t(id, v)"
		dup   = "SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (2, 'c')) t(id, v)"
		nulls = "SELECT * FROM (VALUES (1, 'a'), (NULL, 'b'), (NULL, 'c')) t(id, v)"
		null1 = "SELECT * FROM (VALUES (1, 'a'), (NULL, 'b')) t(id, v)"
	)
	check := func(snapshot int64, sql string, filtered bool, want bool) {
		t.Helper()
		r := &resolved{wh: "wh", uuid: "u1", snapshot: snapshot, sql: sql, filtered: filtered}
		got, err := ss.uniqueIdentifier(ctx, r, "id")
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("snapshot %d %q: unique = %v, want %v", snapshot, sql, got, want)
		}
	}
	check(1, uniq, false, true)
	check(2, dup, false, false)
	check(1, dup, false, true) // snapshot 1 was counted: its answer stands
	check(3, nulls, false, false)
	check(4, null1, false, false)
	check(5, uniq, true, false) // filtered: never unique, not counted
	check(0, "SELECT broken", false, true)
	if n := cache.Len(); n != 2 {
		t.Fatalf("the cache holds %d answers, want its bound 2", n)
	}
	// Snapshot 1 was evicted (3 and 4 came later): it is counted again.
	check(1, dup, false, false)
}

// TestOwnedJoinKey: under differential privacy a join key must belong to
// one identifier per value: rows of one person sharing a key are fine,
// two people sharing one are not (a row joining them would count both),
// NULL keys match nothing and are aside, a key shared by a NULL and a
// non-NULL identifier is refused; answers are cached per snapshot.
func TestOwnedJoinKey(t *testing.T) {
	ctx := context.Background()
	c, err := duckdb.NewConnector("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dc, err := c.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	cache, err := lru.New[string, bool](16)
	if err != nil {
		t.Fatal(err)
	}
	ss := &session{e: &Engine{unique: cache}, conn: dc.(*duckdb.Conn)}
	for i, tc := range []struct {
		rows string
		want bool
	}{
		{"(1, 'a'), (2, 'b'), (3, 'c')", true},
		{"(1, 'a'), (1, 'a'), (2, 'b')", true},       // one person's two rows
		{"(1, 'a'), (2, 'a'), (3, 'c')", false},      // two people share 'a'
		{"(1, NULL), (2, NULL), (3, 'c')", true},     // NULL keys match nothing
		{"(NULL, 'a'), (1, 'a')", false},             // a NULL identifier and 1 share 'a'
		{"(NULL, 'a'), (NULL, 'a'), (1, 'b')", true}, // NULL identifiers count as one
	} {
		r := &resolved{wh: "wh", uuid: "u1", snapshot: int64(i + 1), sql: "SELECT * FROM (VALUES " + tc.rows + ") t(id, k)"}
		got, err := ss.ownedJoinKey(ctx, r, "k", "id")
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s: owned = %v, want %v", tc.rows, got, tc.want)
		}
	}
}
