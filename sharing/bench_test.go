package sharing_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/sharing"
)

// BenchmarkAuthenticate is the cost a protocol server pays per request to
// authenticate a recipient token (SQLite store).
func BenchmarkAuthenticate(b *testing.B) {
	e := newEnvB(b)
	cred := e.setup(b, sharing.RecipientSpec{})
	ctx := b.Context()
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.svc.Authenticate(ctx, cred.Token, local); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTable is the cost of resolving one shared table by the names
// the recipient sees (grant, share, objects, existence in the catalog).
func BenchmarkTable(b *testing.B) {
	e := newEnvB(b)
	cred := e.setup(b, sharing.RecipientSpec{})
	ctx := b.Context()
	r, err := e.svc.Authenticate(ctx, cred.Token, local)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.svc.Table(ctx, r, "s1", "pub", "accts"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTables lists a share of one table and a namespace of 100 tables.
func BenchmarkTables(b *testing.B) {
	e := newEnvB(b)
	cred := e.setup(b, sharing.RecipientSpec{})
	ctx := b.Context()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	for i := range 98 {
		if _, err := e.cat.CreateTable(ctx, wh, catalog.Namespace{"sales"}, catalog.CreateTableRequest{Name: fmt.Sprintf("t%03d", i), Schema: sc}); err != nil {
			b.Fatal(err)
		}
	}
	r, err := e.svc.Authenticate(ctx, cred.Token, local)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		ts, err := e.svc.Tables(ctx, r, "s1")
		if err != nil || len(ts) != 100 {
			b.Fatal(len(ts), err)
		}
	}
}

func newEnvB(b *testing.B) *env {
	return newEnv(b, filepath.Join(b.TempDir(), "floe.db"), sharing.Limits{})
}
