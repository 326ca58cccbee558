package mgmtapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"

	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/catalog"
)

// fakeTombstones holds n tombstones owned by "other", plus one owned by
// "carol" at the end, and counts the tombstones it hands out.
type fakeTombstones struct {
	all  []catalog.Tombstone
	read int
}

func newFakeTombstones(n int) *fakeTombstones {
	f := &fakeTombstones{}
	for i := range n {
		f.all = append(f.all, catalog.Tombstone{Location: fmt.Sprintf("s3://floe/a/t%08d", i), Owner: "other",
			Ident: catalog.Ident{Namespace: catalog.Namespace{"a"}, Name: fmt.Sprintf("t%d", i)}})
	}
	f.all = append(f.all, catalog.Tombstone{Location: "s3://floe/z/carols", Owner: "carol-id",
		Ident: catalog.Ident{Namespace: catalog.Namespace{"z"}, Name: "carols"}})
	return f
}

func (f *fakeTombstones) TombstonesPage(_ context.Context, _, after string, limit int) ([]catalog.Tombstone, error) {
	i := sort.Search(len(f.all), func(i int) bool { return f.all[i].Location > after })
	page := f.all[i:min(i+limit, len(f.all))]
	f.read += len(page)
	return page, nil
}

func (f *fakeTombstones) ReleaseTombstone(context.Context, string, string) (catalog.Tombstone, error) {
	return catalog.Tombstone{}, nil
}

type carolVerifier struct{}

func (carolVerifier) Verify(context.Context, string) (auth.Claims, error) {
	return auth.Claims{PrincipalID: "carol-id", Principal: "carol", Scopes: []string{"catalog"}}, nil
}

// TestTombstoneScanBound: a non-administrator's listing, which filters
// others' tombstones out, examines at most maxTombstoneScan of them per
// request, and continues with a page token to find its own.
func TestTombstoneScanBound(t *testing.T) {
	fake := newFakeTombstones(2*maxTombstoneScan + 5)
	h := New(Options{Auth: carolVerifier{}, Tombstones: fake})
	list := func(token string) Tombstones {
		t.Helper()
		r := httptest.NewRequest("GET", "/api/v1/warehouses/floe/tombstones?page_token="+token, nil)
		r.Header.Set("Authorization", "Bearer x")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("list: %d %s", w.Code, w.Body)
		}
		var out Tombstones
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	var found []Tombstone
	token, requests := "", 0
	for {
		fake.read = 0
		page := list(token)
		requests++
		if fake.read > maxTombstoneScan {
			t.Fatalf("one request examined %d tombstones, bound %d", fake.read, maxTombstoneScan)
		}
		found = append(found, page.Tombstones...)
		if token = page.NextPageToken; token == "" {
			break
		}
		if requests > 10 {
			t.Fatal("the listing does not end")
		}
	}
	if requests != 3 || len(found) != 1 || found[0].Table != "z.carols" || found[0].Owner != "carol" {
		t.Errorf("%d requests found %+v, want 3 requests finding z.carols owned by carol", requests, found)
	}
}
