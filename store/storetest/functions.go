package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/floe-lake/floe"
)

// testFunctions: the function pointers (catalog.FunctionStore): create,
// list with pagination, compare-and-swap (one winner among contenders),
// delete, their own identifier space, and a namespace holding functions is
// not empty.
func testFunctions(t *testing.T, e *env) {
	e.setup(t, "a", "b")
	a := ident("f", "a")
	// Missing: NotFound of entity "function"; a missing namespace too.
	_, err := e.s.Function(e.ctx, wh, a)
	wantErr(t, err, floe.NotFound, "function", "Function does not exist: a.f")
	_, err = e.s.ListFunctions(e.ctx, wh, ns("nope"), "", 0)
	wantErr(t, err, floe.NotFound, "namespace", "")
	wantErr(t, e.s.SwapFunction(e.ctx, wh, ident("f", "nope"), "", "m0"), floe.NotFound, "namespace", "")
	wantErr(t, e.s.SwapFunction(e.ctx, wh, a, "", ""), floe.Invalid, "function", "")

	must(t, e.s.SwapFunction(e.ctx, wh, a, "", "m0"))
	wantErr(t, e.s.SwapFunction(e.ctx, wh, a, "", "m1"), floe.AlreadyExists, "function", "Function already exists: a.f")
	// A table of the same name is another object.
	e.create(t, a, "table", "t0")
	got, err := e.s.Function(e.ctx, wh, a)
	must(t, err)
	if got.MetadataLocation != "m0" || got.UpdatedAt.IsZero() {
		t.Errorf("function = %+v", got)
	}

	// Pagination in name order.
	for _, n := range []string{"e", "c", "d", "b"} {
		must(t, e.s.SwapFunction(e.ctx, wh, ident(n, "a"), "", "m-"+n))
	}
	var all []string
	after := ""
	for {
		page, err := e.s.ListFunctions(e.ctx, wh, ns("a"), after, 2)
		must(t, err)
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1]
	}
	if want := []string{"b", "c", "d", "e", "f"}; !slices.Equal(all, want) {
		t.Errorf("paged list = %v, want %v", all, want)
	}
	if l, err := e.s.ListFunctions(e.ctx, wh, ns("b"), "", 0); err != nil || len(l) != 0 {
		t.Errorf("list of b = %v, %v", l, err)
	}

	// Compare-and-swap: a stale old location conflicts; of contenders
	// swapping from the same location exactly one wins.
	wantErr(t, e.s.SwapFunction(e.ctx, wh, a, "stale", "m1"), floe.Conflict, "commit", "")
	errs := race(Contenders, func(i int) error { return e.s.SwapFunction(e.ctx, wh, a, "m0", fmt.Sprintf("m1-%d", i)) })
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("swaps %d and %d both won", won, i)
		case err == nil:
			won = i
		case floe.KindOf(err) != floe.Conflict:
			t.Fatalf("swap %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no swap won")
	}
	got, err = e.s.Function(e.ctx, wh, a)
	must(t, err)
	if got.MetadataLocation != fmt.Sprintf("m1-%d", won) {
		t.Errorf("pointer %q after the race won by %d", got.MetadataLocation, won)
	}

	// A namespace holding functions is not empty.
	for _, n := range []string{"b", "c", "d", "e"} {
		_, err := e.s.DeleteFunction(e.ctx, wh, ident(n, "a"), "")
		must(t, err)
	}
	_, err = e.s.DeleteEntity(e.ctx, wh, a, "table", nil)
	must(t, err)
	wantErr(t, e.s.DropNamespace(e.ctx, wh, ns("a")), floe.NotEmpty, "namespace", "")

	// Delete: conditional on the pointer, then gone.
	_, err = e.s.DeleteFunction(e.ctx, wh, a, "stale")
	wantErr(t, err, floe.Conflict, "commit", "")
	del, err := e.s.DeleteFunction(e.ctx, wh, a, got.MetadataLocation)
	must(t, err)
	if del.MetadataLocation != got.MetadataLocation {
		t.Errorf("deleted %+v", del)
	}
	_, err = e.s.DeleteFunction(e.ctx, wh, a, "")
	wantErr(t, err, floe.NotFound, "function", "")
	wantErr(t, e.s.SwapFunction(e.ctx, wh, a, got.MetadataLocation, "m2"), floe.Conflict, "commit", "")
	must(t, e.s.DropNamespace(e.ctx, wh, ns("a")))
}
