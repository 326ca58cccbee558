package engine

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// fixedSource serves every location with the same body.
type fixedSource struct{ body string }

func (fixedSource) LocalPath(context.Context, string) (string, bool, error) { return "", false, nil }
func (s fixedSource) Open(context.Context, string) (io.ReadCloser, int64, error) {
	return io.NopCloser(strings.NewReader(s.body)), int64(len(s.body)), nil
}
func (fixedSource) Dirs() []string { return nil }

// TestForeignFilesKeptApart: a foreign catalog's file whose location is a
// local file's (a remote may name any location) is read from the remote
// and cached apart: neither copy is ever served for the other, nor one
// foreign catalog's for another's.
func TestForeignFilesKeptApart(t *testing.T) {
	c := newFileCache(fixedSource{"local rows"}, 1<<20, 16)
	defer c.close()
	const loc = "s3://floe/crm/accounts/data/00000.parquet"
	ctx := context.Background()
	acme := context.WithValue(ctx, foreignScopeKey{}, &foreignScope{wh: "acme", src: fixedSource{"acme rows"}})
	other := context.WithValue(ctx, foreignScopeKey{}, &foreignScope{wh: "other", src: fixedSource{"other rows"}})
	read := func(ctx context.Context) string {
		t.Helper()
		ps := &pinSet{c: c}
		defer ps.release()
		p, err := c.path(ctx, loc, ps)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for range 2 { // the second round reads the cached copies
		if got := read(ctx); got != "local rows" {
			t.Fatalf("local: %q", got)
		}
		if got := read(acme); got != "acme rows" {
			t.Fatalf("acme: %q", got)
		}
		if got := read(other); got != "other rows" {
			t.Fatalf("other: %q", got)
		}
	}
	if _, n := c.stats(); n != 3 {
		t.Fatalf("%d cached copies, want 3", n)
	}
	if k := scopeOf(acme).key("uuid"); k == "uuid" || k == scopeOf(other).key("uuid") {
		t.Fatalf("plan and table cache keys of foreign tables are not apart: %q", k)
	}
}

// TestRemoteError: a foreign catalog that does not answer is SQLSTATE
// 08001 naming it; other errors pass unchanged.
func TestRemoteError(t *testing.T) {
	err := remoteError("acme", floe.E(floe.Unavailable, "", "connection refused"))
	var pe *pgwire.Error
	if !errors.As(err, &pe) || pe.Code != CodeRemoteUnavailable || !strings.Contains(pe.Message, "foreign catalog acme") {
		t.Fatalf("unavailable: %#v", err)
	}
	denied := floe.E(floe.Forbidden, "privilege", "no SELECT")
	if got := remoteError("acme", denied); got != denied {
		t.Fatalf("forbidden changed: %v", got)
	}
	if remoteError("acme", nil) != nil {
		t.Fatal("nil changed")
	}
}
