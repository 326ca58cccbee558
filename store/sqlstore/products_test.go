package sqlstore

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/products"
)

// TestProducts: versions (create, next, stale, duplicate), the kept
// versions' bound, the per-warehouse limit, list of current versions, check
// runs with their bound, concurrent publications of one version (exactly
// one wins) and drop, on every backend.
func TestProducts(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			s := openForTest(t, be.dsn(t), Options{})
			at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
			prod := func(wh, name string, v int, desc string) products.Product {
				return products.Product{Warehouse: wh, Name: name, Owner: "sales", Description: desc, Version: v, UpdatedAt: at, UpdatedBy: "alice",
					Outputs: []products.Port{{Name: "t", Kind: products.PortTable, Namespace: catalog.Namespace{"crm"}, Table: "t"}}}
			}
			const keep, max = 3, 2
			for _, tc := range []struct {
				name string
				p    products.Product
				want floe.Kind
			}{
				{"new", prod("wh", "pipeline", 1, "v1"), -1},
				{"new again", prod("wh", "pipeline", 1, "again"), floe.AlreadyExists},
				{"skips a version", prod("wh", "pipeline", 3, "v3"), floe.Conflict},
				{"next", prod("wh", "pipeline", 2, "v2"), -1},
				{"stale", prod("wh", "pipeline", 2, "v2 again"), floe.Conflict},
				{"unknown, not new", prod("wh", "ghost", 2, "x"), floe.NotFound},
				{"second product", prod("wh", "churn", 1, "c1"), -1},
				{"over the limit", prod("wh", "third", 1, "x"), floe.Unprocessable},
				{"other warehouse has its own limit", prod("wh2", "third", 1, "x"), -1},
			} {
				err := s.PutProductVersion(ctx, tc.p, keep, max)
				if tc.want == -1 && err != nil || tc.want != -1 && floe.KindOf(err) != tc.want {
					t.Fatalf("%s: err %v, want kind %v", tc.name, err, tc.want)
				}
			}
			for v := 3; v <= 5; v++ {
				if err := s.PutProductVersion(ctx, prod("wh", "pipeline", v, fmt.Sprint("v", v)), keep, max); err != nil {
					t.Fatal(err)
				}
			}
			vs, err := s.ProductVersions(ctx, "wh", "pipeline")
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) != keep || vs[0].Version != 5 || vs[2].Version != 3 {
				t.Fatalf("kept versions %d (newest %d), want %d from 5", len(vs), vs[0].Version, keep)
			}
			if _, err := s.ProductVersion(ctx, "wh", "pipeline", 1); floe.KindOf(err) != floe.NotFound {
				t.Errorf("pruned version 1: %v, want NotFound", err)
			}
			cur, err := s.ProductVersion(ctx, "wh", "pipeline", 0)
			if err != nil || cur.Description != "v5" || !cur.UpdatedAt.Equal(at) || cur.Outputs[0].Namespace.String() != "crm" {
				t.Fatalf("current: %+v %v", cur, err)
			}
			ls, err := s.Products(ctx, "wh")
			if err != nil || len(ls) != 2 || ls[0].Name != "churn" || ls[1].Name != "pipeline" || ls[1].Version != 5 {
				t.Fatalf("list: %+v %v", ls, err)
			}
			if all, err := s.Products(ctx, ""); err != nil || len(all) != 3 {
				t.Fatalf("list all: %d %v", len(all), err)
			}

			// Concurrent publications of version 6: exactly one wins.
			var wg sync.WaitGroup
			errs := make([]error, 6)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = s.PutProductVersion(ctx, prod("wh", "pipeline", 6, fmt.Sprint("racer", i)), keep, max)
				}()
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case floe.KindOf(err) != floe.Conflict:
					t.Errorf("racer: %v, want Conflict", err)
				}
			}
			if won != 1 {
				t.Errorf("%d racers won version 6, want 1", won)
			}

			for i := range 5 {
				r := products.CheckRun{ID: fmt.Sprint("run", i), Warehouse: "wh", Product: "pipeline", Version: 6, At: at.Add(time.Duration(i) * time.Minute),
					Status: products.StatusPass, Results: []products.Result{{Expectation: "e", Status: products.StatusPass}}}
				if err := s.AddCheckRun(ctx, r, 3); err != nil {
					t.Fatal(err)
				}
			}
			runs, err := s.CheckRuns(ctx, "wh", "pipeline", 10)
			if err != nil || len(runs) != 3 || runs[0].ID != "run4" || runs[2].ID != "run2" || runs[0].Results[0].Expectation != "e" {
				t.Fatalf("runs: %+v %v", runs, err)
			}
			if err := s.DropProduct(ctx, "wh", "pipeline"); err != nil {
				t.Fatal(err)
			}
			if err := s.DropProduct(ctx, "wh", "pipeline"); floe.KindOf(err) != floe.NotFound {
				t.Errorf("drop twice: %v", err)
			}
			if runs, _ := s.CheckRuns(ctx, "wh", "pipeline", 10); len(runs) != 0 {
				t.Errorf("drop kept %d runs", len(runs))
			}
			if _, err := s.ProductVersion(ctx, "wh", "pipeline", 0); floe.KindOf(err) != floe.NotFound {
				t.Errorf("dropped product: %v", err)
			}
		})
	}
}
