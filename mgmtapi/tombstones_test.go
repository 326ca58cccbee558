package mgmtapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/floe-lake/floe/audit"
)

// tombstoneList is the answer of GET .../tombstones as a client sees it.
type tombstoneList struct {
	Tombstones []struct {
		Location  string   `json:"location"`
		Table     string   `json:"table"`
		Namespace []string `json:"namespace"`
		Name      string   `json:"name"`
		Owner     string   `json:"owner"`
		DroppedAt string   `json:"dropped_at"`
	} `json:"tombstones"`
	NextPageToken string `json:"next_page_token"`
}

func (l tombstoneList) tables() []string {
	var out []string
	for _, t := range l.Tombstones {
		out = append(out, t.Table+"@"+t.Owner)
	}
	return out
}

// tombWorld: alice owns a dropped table sandbox.mine (she created and
// dropped it), the admin dropped hr.payroll (only administrators may
// release it), bob holds nothing.
type tombWorld struct {
	e                 *env
	alice, bob        string
	mine, payroll, wh string
}

func newTombWorld(t *testing.T) *tombWorld {
	t.Helper()
	e := newEnv(t)
	f := e.f
	w := &tombWorld{e: e, alice: f.PrincipalToken(t, "alice"), bob: f.PrincipalToken(t, "bob"), wh: f.Warehouse}
	w.payroll = f.CreateTable(t, "hr", "payroll").Metadata.Location
	if r := f.Do(t, "DELETE", f.P("/namespaces/hr/tables/payroll"), nil); r.Status != 204 {
		t.Fatalf("admin drop: %d %s", r.Status, r.Body)
	}
	f.CreateTable(t, "sandbox", "seed")
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "alice", "CREATE_TABLE", nsOn("sandbox")))
	r := f.DoAs(t, w.alice, "POST", f.P("/namespaces/sandbox/tables"), map[string]any{"name": "mine",
		"schema": json.RawMessage(`{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}`)})
	if r.Status != 200 {
		t.Fatalf("alice create: %d %s", r.Status, r.Body)
	}
	var tb struct {
		Metadata struct {
			Location string `json:"location"`
		} `json:"metadata"`
	}
	r.JSON(t, &tb)
	w.mine = tb.Metadata.Location
	if r := f.DoAs(t, w.alice, "DELETE", f.P("/namespaces/sandbox/tables/mine"), nil); r.Status != 204 {
		t.Fatalf("alice drop: %d %s", r.Status, r.Body)
	}
	return w
}

func (w *tombWorld) path() string { return "/api/v1/warehouses/" + w.wh + "/tombstones" }

func (w *tombWorld) release(loc string) string {
	return w.path() + "?location=" + url.QueryEscape(loc)
}

func (w *tombWorld) list(t *testing.T, tok, query string) tombstoneList {
	t.Helper()
	r := w.e.do(t, tok, "GET", w.path()+query, nil)
	if r.Status != 200 {
		t.Fatalf("list tombstones: %d %s", r.Status, r.Body)
	}
	var l tombstoneList
	r.JSON(t, &l)
	return l
}

// TestTombstoneListing: an administrator sees every tombstone, with its
// owner's name; anyone else sees only the ones it owns.
func TestTombstoneListing(t *testing.T) {
	w := newTombWorld(t)
	for _, tt := range []struct {
		who, tok string
		want     []string
	}{
		{"admin", w.e.admin, []string{"hr.payroll@admin", "sandbox.mine@alice"}},
		{"alice", w.alice, []string{"sandbox.mine@alice"}},
		{"bob", w.bob, nil},
	} {
		t.Run(tt.who, func(t *testing.T) {
			got := w.list(t, tt.tok, "").tables()
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s sees %v, want %v", tt.who, got, tt.want)
			}
		})
	}
	l := w.list(t, w.e.admin, "?page_size=1")
	if len(l.Tombstones) != 1 || l.NextPageToken == "" {
		t.Fatalf("first page: %+v", l)
	}
	l2 := w.list(t, w.e.admin, "?page_size=1&page_token="+url.QueryEscape(l.NextPageToken))
	if len(l2.Tombstones) != 1 || l2.Tombstones[0].Location == l.Tombstones[0].Location {
		t.Fatalf("second page: %+v after %+v", l2, l)
	}
	for _, bad := range []string{"0", "1001", "x"} {
		wantError(t, w.e.do(t, w.e.admin, "GET", w.path()+"?page_size="+bad, nil), 400, "BadRequestException", "")
	}
	wantError(t, w.e.do(t, w.alice, "GET", "/api/v1/warehouses/nosuch/tombstones", nil), 404, "NoSuchWarehouseException", "")
}

// TestTombstoneRelease: only a tombstone's owner or an administrator
// releases it (403 naming why otherwise, and audited as denied); a
// released location is no longer listed, and a second release is 404.
func TestTombstoneRelease(t *testing.T) {
	w := newTombWorld(t)
	e := w.e
	why := func(table, loc string) string {
		return fmt.Sprintf("only the previous owner of dropped table %s or an administrator may release its location %s", table, loc)
	}
	r := e.do(t, w.bob, "DELETE", w.release(w.mine), nil, "X-Request-Id", "rid-bob")
	wantError(t, r, 403, "ForbiddenException", why("sandbox.mine", w.mine))
	wantError(t, e.do(t, w.alice, "DELETE", w.release(w.payroll), nil), 403, "ForbiddenException", why("hr.payroll", w.payroll))
	wantError(t, e.do(t, w.alice, "DELETE", w.path(), nil), 400, "BadRequestException", "give the location to release: ?location=s3://...")

	r = e.do(t, w.alice, "DELETE", w.release(w.mine), nil, "X-Request-Id", "rid-alice")
	if r.Status != 200 || !strings.Contains(string(r.Body), `"table":"sandbox.mine"`) {
		t.Fatalf("owner release: %d %s", r.Status, r.Body)
	}
	wantError(t, e.do(t, w.alice, "DELETE", w.release(w.mine), nil), 404, "NotFoundException", "")
	if got := w.list(t, w.alice, "").tables(); len(got) != 0 {
		t.Errorf("alice still sees %v", got)
	}
	e.ok(t, 200, "DELETE", w.release(w.payroll), nil)
	if got := w.list(t, e.admin, "").tables(); len(got) != 0 {
		t.Errorf("admin still sees %v", got)
	}

	recs, err := e.f.App.Store().AuditRecords(context.Background(), 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	byRID := map[string]audit.Record{}
	for _, rec := range recs {
		byRID[rec.RequestID] = rec
	}
	for _, tt := range []struct{ rid, principal, outcome, detail string }{
		{"rid-bob", "bob", "denied", "only the previous owner of dropped table sandbox.mine"},
		{"rid-alice", "alice", "success", `"table":"sandbox.mine"`},
	} {
		rec, ok := byRID[tt.rid]
		if !ok || rec.Action != "mgmt.tombstone.release" || rec.Principal != tt.principal || rec.Outcome != tt.outcome ||
			rec.Resource != "location:"+w.wh+"/"+w.mine || !strings.Contains(string(rec.Detail), tt.detail) {
			t.Errorf("%s: audit %+v detail %s", tt.rid, rec, rec.Detail)
		}
	}
}
