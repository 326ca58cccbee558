package restcat_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
)

// locationWorld is hr.payroll owned by principal "alice" (it created it),
// and principal "bob" with CREATE_TABLE on namespace sandbox only.
type locationWorld struct {
	f          *testkit.Floe
	alice, bob string
	payroll    loadResult
}

func newLocationWorld(t *testing.T) *locationWorld {
	t.Helper()
	f := testkit.Start(t)
	for _, ns := range []string{"hr", "sandbox"} {
		mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), map[string]any{"namespace": []string{ns}}), 200)
	}
	w := &locationWorld{f: f, alice: principal(t, f, "alice"), bob: principal(t, f, "bob")}
	grant(t, f, authz.Grant{Grantee: authz.Principal("alice"), Privilege: authz.CreateTable, On: authz.NamespaceOf(f.Warehouse, catalog.Namespace{"hr"})})
	grant(t, f, authz.Grant{Grantee: authz.Principal("bob"), Privilege: authz.CreateTable, On: authz.NamespaceOf(f.Warehouse, catalog.Namespace{"sandbox"})})
	r := f.DoAs(t, w.alice, "POST", f.P("/namespaces/hr/tables"), createTableBody("payroll", ""))
	mustStatus(t, r, 200)
	r.JSON(t, &w.payroll)
	return w
}

func (w *locationWorld) register(t *testing.T, tok, ns, name string) testkit.Response {
	t.Helper()
	return w.f.DoAs(t, tok, "POST", w.f.P("/namespaces/"+ns+"/register"),
		map[string]any{"name": name, "metadata-location": w.payroll.MetadataLocation})
}

func (w *locationWorld) createAt(t *testing.T, tok, ns, name, loc string) testkit.Response {
	t.Helper()
	return w.f.DoAs(t, tok, "POST", w.f.P("/namespaces/"+ns+"/tables"), createTableBody(name, fmt.Sprintf(`,"location":%q`, loc)))
}

// TestRegisterAfterDropIsRefused: a table dropped without purge leaves its
// files; nobody but an administrator (the dropper was one) may take them
// over, by register or by a create at, inside or above its location.
func TestRegisterAfterDropIsRefused(t *testing.T) {
	w := newLocationWorld(t)
	f := w.f
	mustStatus(t, f.Do(t, "DELETE", f.P("/namespaces/hr/tables/payroll"), nil), 204) // admin, no purge
	loc := w.payroll.Metadata.Location

	wantErr(t, w.register(t, w.bob, "sandbox", "mine"), 403, "ForbiddenException", "dropped table hr.payroll")
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/sandbox/tables/mine"), nil), 404)
	for name, l := range map[string]string{"same": loc, "inside": loc + "/data", "above": loc[:strings.LastIndexByte(loc, '/')]} {
		t.Run(name, func(t *testing.T) {
			wantErr(t, w.createAt(t, w.bob, "sandbox", "x", l), 403, "ForbiddenException", "dropped table hr.payroll")
			mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/sandbox/tables/x"), nil), 404)
		})
	}
	// Staged creates are checked when they commit.
	r := f.DoAs(t, w.bob, "POST", f.P("/namespaces/sandbox/tables"), createTableBody("st", `,"stage-create":true`))
	mustStatus(t, r, 200)
	wantErr(t, f.DoAs(t, w.bob, "POST", f.P("/namespaces/sandbox/tables/st"), stagedCommit(t, r, loc)), 403, "ForbiddenException", "dropped table hr.payroll")
	// Alice did not drop it: the admin did, so alice cannot take it back either.
	wantErr(t, w.register(t, w.alice, "hr", "payroll"), 403, "ForbiddenException", "dropped table hr.payroll")
	// An administrator can: the claim consumes the tombstone.
	mustStatus(t, w.register(t, f.Token(t), "hr", "payroll"), 200)
	tombs, err := tombstones(f)
	if err != nil || len(tombs) != 0 {
		t.Errorf("tombstones after the admin's register: %+v %v", tombs, err)
	}
}

// stagedCommit is the assert-create commit of the staged create answered
// by r, with its location set to loc.
func stagedCommit(t *testing.T, r testkit.Response, loc string) string {
	t.Helper()
	var staged struct {
		Metadata struct {
			UUID string `json:"table-uuid"`
		} `json:"metadata"`
	}
	r.JSON(t, &staged)
	return fmt.Sprintf(`{"requirements":[{"type":"assert-create"}],"updates":[
		{"action":"assign-uuid","uuid":%q},{"action":"upgrade-format-version","format-version":2},
		{"action":"add-schema","schema":%s},{"action":"set-current-schema","schema-id":-1},
		{"action":"add-spec","spec":{"spec-id":0,"fields":[]}},{"action":"set-default-spec","spec-id":-1},
		{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},{"action":"set-default-sort-order","sort-order-id":-1},
		{"action":"set-location","location":%q}]}`, staged.Metadata.UUID, schemaJSON, loc)
}

// TestOwnerReclaimsItsOwnDrop: the principal that dropped a table it could
// read owns the tombstone and may register it again; others may not.
func TestOwnerReclaimsItsOwnDrop(t *testing.T) {
	w := newLocationWorld(t)
	f := w.f
	mustStatus(t, f.DoAs(t, w.alice, "DELETE", f.P("/namespaces/hr/tables/payroll"), nil), 204)
	wantErr(t, w.register(t, w.bob, "sandbox", "mine"), 403, "ForbiddenException", "dropped table hr.payroll")
	mustStatus(t, w.register(t, w.alice, "hr", "payroll"), 200)
	tombs, err := tombstones(f)
	if err != nil || len(tombs) != 0 {
		t.Errorf("tombstones after the owner's register: %+v %v", tombs, err)
	}
}

// TestDropOnlyPrincipalGainsNoData: a principal with DROP but no SELECT on
// a table does not own the files its drop leaves behind.
func TestDropOnlyPrincipalGainsNoData(t *testing.T) {
	w := newLocationWorld(t)
	f := w.f
	grant(t, f, authz.Grant{Grantee: authz.Principal("bob"), Privilege: authz.Drop,
		On: authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"hr"}, Name: "payroll"})})
	mustStatus(t, f.DoAs(t, w.bob, "DELETE", f.P("/namespaces/hr/tables/payroll"), nil), 204)
	wantErr(t, w.register(t, w.bob, "sandbox", "mine"), 403, "ForbiddenException", "dropped table hr.payroll")
	// The same through unregister.
	mustStatus(t, w.register(t, f.Token(t), "hr", "payroll"), 200)
	grant(t, f, authz.Grant{Grantee: authz.Principal("bob"), Privilege: authz.Drop,
		On: authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"hr"}, Name: "payroll"})})
	mustStatus(t, f.DoAs(t, w.bob, "POST", f.P("/namespaces/hr/tables/payroll/unregister"), nil), 200)
	wantErr(t, w.register(t, w.bob, "sandbox", "mine"), 403, "ForbiddenException", "dropped table hr.payroll")
}

// TestPurgeLeavesNoTombstone: a purge that deletes a Floe-assigned
// location frees it.
func TestPurgeLeavesNoTombstone(t *testing.T) {
	w := newLocationWorld(t)
	f := w.f
	mustStatus(t, f.DoAs(t, w.alice, "DELETE", f.P("/namespaces/hr/tables/payroll?purgeRequested=true"), nil), 204)
	tombs, err := tombstones(f)
	if err != nil || len(tombs) != 0 {
		t.Errorf("tombstones after a purge: %+v %v", tombs, err)
	}
	mustStatus(t, w.createAt(t, w.bob, "sandbox", "x", w.payroll.Metadata.Location), 200)
}

// TestClientLocationOverExistingData: a client-chosen location must be
// empty unless the caller is an administrator, so that a table cannot be
// laid over files someone else put there.
func TestClientLocationOverExistingData(t *testing.T) {
	w := newLocationWorld(t)
	f := w.f
	landing := "s3://" + f.Warehouse + "/landing"
	p := f.LocalPath(landing + "/salaries.csv")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("alice,100000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantErr(t, w.createAt(t, w.bob, "sandbox", "x", landing), 403, "ForbiddenException", "not empty")
	r := f.DoAs(t, w.bob, "POST", f.P("/namespaces/sandbox/tables"), createTableBody("st", `,"stage-create":true`))
	mustStatus(t, r, 200)
	wantErr(t, f.DoAs(t, w.bob, "POST", f.P("/namespaces/sandbox/tables/st"), stagedCommit(t, r, landing)), 403, "ForbiddenException", "not empty")
	wantErr(t, f.DoAs(t, w.bob, "POST", f.P("/namespaces/sandbox/tables"), createTableBody("st2", fmt.Sprintf(`,"stage-create":true,"location":%q`, landing))),
		403, "ForbiddenException", "not empty")
	// Moving an existing table there is refused too.
	mustStatus(t, f.DoAs(t, w.bob, "POST", f.P("/namespaces/sandbox/tables"), createTableBody("mv", "")), 200)
	wantErr(t, f.DoAs(t, w.bob, "POST", f.P("/namespaces/sandbox/tables/mv"), fmt.Sprintf(`{"requirements":[],"updates":[{"action":"set-location","location":%q}]}`, landing)),
		403, "ForbiddenException", "not empty")
	// An empty location of the caller's choice is fine; an administrator may lay a table over data.
	mustStatus(t, w.createAt(t, w.bob, "sandbox", "y", "s3://"+f.Warehouse+"/bobs"), 200)
	mustStatus(t, w.createAt(t, f.Token(t), "sandbox", "x", landing), 200)
}

// TestRenameAcrossNamespacesNeedsReadAndShare: DROP on the source and
// CREATE_TABLE on the target are not enough to move a table into a
// namespace the renamer governs; it must already hold SELECT and
// MANAGE_GRANTS on the table.
func TestRenameAcrossNamespacesNeedsReadAndShare(t *testing.T) {
	w := newLocationWorld(t)
	f := w.f
	payroll := authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"hr"}, Name: "payroll"})
	grant(t, f, authz.Grant{Grantee: authz.Principal("bob"), Privilege: authz.Drop, On: payroll})
	body := `{"source":{"namespace":["hr"],"name":"payroll"},"destination":{"namespace":["sandbox"],"name":"p"}}`
	wantErr(t, f.DoAs(t, w.bob, "POST", f.P("/tables/rename"), body), 403, "ForbiddenException",
		`principal "bob" lacks SELECT on table "hr.payroll"`)
	grant(t, f, authz.Grant{Grantee: authz.Principal("bob"), Privilege: authz.Select, On: payroll})
	wantErr(t, f.DoAs(t, w.bob, "POST", f.P("/tables/rename"), body), 403, "ForbiddenException",
		`principal "bob" lacks MANAGE_GRANTS on table "hr.payroll"`)
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/hr/tables/payroll"), nil), 204)
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/sandbox/tables/p"), nil), 404)
	// Alice, the owner, may move it.
	grant(t, f, authz.Grant{Grantee: authz.Principal("alice"), Privilege: authz.CreateTable, On: authz.NamespaceOf(f.Warehouse, catalog.Namespace{"sandbox"})})
	mustStatus(t, f.DoAs(t, w.alice, "POST", f.P("/tables/rename"), body), 204)
}

// TestRenameInNamespaceGivesNothing: a rename inside a namespace by a
// principal that cannot read the table leaves it unable to read it, and
// the table's grants follow it.
func TestRenameInNamespaceGivesNothing(t *testing.T) {
	w := newLocationWorld(t)
	f := w.f
	hr := authz.NamespaceOf(f.Warehouse, catalog.Namespace{"hr"})
	payroll := authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"hr"}, Name: "payroll"})
	grant(t, f, authz.Grant{Grantee: authz.Principal("bob"), Privilege: authz.Drop, On: payroll})
	grant(t, f, authz.Grant{Grantee: authz.Principal("bob"), Privilege: authz.CreateTable, On: hr})
	mustStatus(t, f.DoAs(t, w.bob, "POST", f.P("/tables/rename"), `{"source":{"namespace":["hr"],"name":"payroll"},"destination":{"namespace":["hr"],"name":"p2"}}`), 204)
	r := f.DoAs(t, w.bob, "GET", f.P("/namespaces/hr/tables/p2"), nil)
	if r.Status == 200 {
		var lr loadResult
		r.JSON(t, &lr)
		if accessOf(t, f, lr) != "" {
			t.Fatal("the renamer got credentials for a table it could not read")
		}
	}
	wantErr(t, f.DoAs(t, w.bob, "GET", f.P("/namespaces/hr/tables/p2/credentials"), nil), 403, "ForbiddenException", `lacks SELECT on table "hr.p2"`)
	// The owner keeps its access under the new name.
	r = f.DoAs(t, w.alice, "GET", f.P("/namespaces/hr/tables/p2"), nil)
	mustStatus(t, r, 200)
	var lr loadResult
	r.JSON(t, &lr)
	if accessOf(t, f, lr) == "" {
		t.Error("the owner lost its access through a rename")
	}
}

func tombstones(f *testkit.Floe) ([]catalog.Tombstone, error) {
	return f.App.Catalog().Tombstones(context.Background(), f.Warehouse)
}
