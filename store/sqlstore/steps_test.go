package sqlstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// ApplySteps is all or nothing: a rename and a drop before a swap that
// fails are undone with it.
func TestApplyStepsAtomic(t *testing.T) {
	ctx := context.Background()
	s := openForTest(t, filepath.Join(t.TempDir(), "floe.db"), Options{})
	if err := s.PutWarehouse(ctx, catalog.Warehouse{Name: "w", Location: "file:///tmp/w"}); err != nil {
		t.Fatal(err)
	}
	ns := catalog.Namespace{"db"}
	if err := s.CreateNamespace(ctx, "w", ns, nil); err != nil {
		t.Fatal(err)
	}
	id := func(n string) catalog.Ident { return catalog.Ident{Namespace: ns, Name: n} }
	for _, n := range []string{"a", "b", "c"} {
		if err := s.SwapPointers(ctx, []catalog.Swap{{Warehouse: "w", Ident: id(n), Kind: catalog.KindTable, New: "m-" + n}}); err != nil {
			t.Fatal(err)
		}
	}
	to := id("a2")
	tests := []struct {
		name  string
		steps []catalog.Step
		err   floe.Kind
	}{
		{"stale swap after rename and drop", []catalog.Step{
			{Op: &catalog.EntityOp{Kind: catalog.KindTable, Ident: id("a"), RenameTo: &to}},
			{Op: &catalog.EntityOp{Kind: catalog.KindTable, Ident: id("b")}},
			{Swap: &catalog.Swap{Warehouse: "w", Ident: id("c"), Kind: catalog.KindTable, Old: "stale", New: "m-c2"}},
		}, floe.Conflict},
		{"create onto a name taken", []catalog.Step{
			{Op: &catalog.EntityOp{Kind: catalog.KindTable, Ident: id("a"), RenameTo: &to}},
			{Swap: &catalog.Swap{Warehouse: "w", Ident: id("b"), Kind: catalog.KindTable, New: "m-new"}},
		}, floe.AlreadyExists},
		{"drop of a missing table", []catalog.Step{
			{Op: &catalog.EntityOp{Kind: catalog.KindTable, Ident: id("b")}},
			{Op: &catalog.EntityOp{Kind: catalog.KindTable, Ident: id("zz")}},
		}, floe.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.ApplySteps(ctx, "w", tt.steps)
			if floe.KindOf(err) != tt.err {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			for _, n := range []string{"a", "b", "c"} {
				e, err := s.Entity(ctx, "w", id(n))
				if err != nil || e.MetadataLocation != "m-"+n {
					t.Fatalf("%s: %v %v: a failed step list changed the store", n, e, err)
				}
			}
			if _, err := s.Entity(ctx, "w", to); floe.KindOf(err) != floe.NotFound {
				t.Fatalf("a2 exists: %v", err)
			}
		})
	}
	// Freeing a name and taking it in one step list: dbt's swap.
	back := id("a_backup")
	err := s.ApplySteps(ctx, "w", []catalog.Step{
		{Op: &catalog.EntityOp{Kind: catalog.KindTable, Ident: id("a"), RenameTo: &back}},
		{Op: &catalog.EntityOp{Kind: catalog.KindTable, Ident: id("b"), RenameTo: ptr(id("a"))}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := s.Entity(ctx, "w", id("a")); err != nil || e.MetadataLocation != "m-b" {
		t.Fatalf("a: %v %v", e, err)
	}
}

func ptr[T any](v T) *T { return &v }
