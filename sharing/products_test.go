package sharing_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/sharing/deltasharing"
)

// fakeProducts holds the current version of each product.
type fakeProducts struct {
	mu sync.Mutex
	m  map[string]sharing.SharedProduct
}

func (f *fakeProducts) Product(_ context.Context, wh, name string) (sharing.SharedProduct, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.m[wh+"/"+name]
	if !ok {
		return sharing.SharedProduct{}, floe.E(floe.NotFound, "data product", "data product %q does not exist", name)
	}
	return p, nil
}

func (f *fakeProducts) publish(name string, version int, outputs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := sharing.SharedProduct{Name: name, Version: version, Description: "Accounts and leads.", Owner: "sales_ops"}
	for _, o := range outputs {
		ns, n, _ := strings.Cut(o, ".")
		p.Outputs = append(p.Outputs, sharing.ProductOutput{Ident: catalog.Ident{Namespace: catalog.Namespace{ns}, Name: n}})
	}
	if f.m == nil {
		f.m = map[string]sharing.SharedProduct{}
	}
	f.m[wh+"/"+name] = p
}

// TestProductObjects: a shared product shares its current outputs under
// their own names (or in its schema alias), follows its new versions
// (outputs removed leave, outputs added join), shares nothing once
// dropped, and needs the right to grant SELECT on every output to be
// added.
func TestProductObjects(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		fp := &fakeProducts{}
		svc := sharing.New(sharing.Options{Store: e.st, Catalog: e.cat, Authz: e.authz, DefaultWarehouse: wh, Now: e.clock.Now,
			FilterColumns: deltasharing.FilterColumns, Products: fp})
		fp.publish("pipeline", 1, "crm.accounts", "crm.leads")
		_, err := svc.CreateShare(ctx, alice, "s1", "", "")
		if err != nil {
			e.grant(t, alice, authz.CreateShare, authz.Warehouse(wh))
			_, err = svc.CreateShare(ctx, alice, "s1", "", "")
		}
		must(t, err)

		// alice may grant SELECT on one output only: refused, the other named.
		_, err = e.authz.Grant(ctx, authz.Grant{Grantee: authz.Principal("alice"), Privilege: authz.ManageGrants, On: accounts(), CreatedBy: "admin"})
		must(t, err)
		_, err = svc.AddObject(ctx, alice, "s1", sharing.ObjectSpec{Kind: sharing.ObjectProduct, Name: "pipeline"})
		wantErr(t, err, floe.Forbidden, "crm.leads")
		_, err = e.authz.Grant(ctx, authz.Grant{Grantee: authz.Principal("alice"), Privilege: authz.ManageGrants,
			On: authz.Table(wh, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "leads"}), CreatedBy: "admin"})
		must(t, err)
		for _, c := range []struct {
			spec sharing.ObjectSpec
			kind floe.Kind
			msg  string
		}{
			{sharing.ObjectSpec{Kind: sharing.ObjectProduct, Name: "nope"}, floe.NotFound, `data product "nope" does not exist`},
			{sharing.ObjectSpec{Kind: sharing.ObjectProduct, Name: "crm.pipeline"}, floe.Invalid, "named by its name alone"},
			{sharing.ObjectSpec{Kind: sharing.ObjectProduct, Name: "pipeline", AliasName: "x"}, floe.Invalid, "schema alias only"},
			{sharing.ObjectSpec{Kind: sharing.ObjectProduct, Name: "pipeline", PartitionFilter: "region = 'x'"}, floe.Invalid, "not to a product"},
		} {
			_, err := svc.AddObject(ctx, alice, "s1", c.spec)
			wantErr(t, err, c.kind, c.msg)
		}
		o, err := svc.AddObject(ctx, alice, "s1", sharing.ObjectSpec{Kind: sharing.ObjectProduct, Name: "pipeline"})
		must(t, err)
		if o.Kind != sharing.ObjectProduct || o.Name != "pipeline" || len(o.Namespace) != 0 {
			t.Fatalf("object %+v", o)
		}
		_, err = svc.AddObject(ctx, alice, "s1", sharing.ObjectSpec{Kind: sharing.ObjectProduct, Name: "pipeline"})
		wantErr(t, err, floe.AlreadyExists, "")

		_, cred, err := svc.CreateRecipient(ctx, admin, sharing.RecipientSpec{Name: "acme"})
		must(t, err)
		_, err = svc.GrantShare(ctx, admin, "s1", "acme")
		must(t, err)
		r, err := svc.Authenticate(ctx, cred.Token, local)
		must(t, err)
		names := func() []string {
			t.Helper()
			ts, err := svc.Tables(ctx, r, "s1")
			must(t, err)
			var out []string
			for _, tb := range ts {
				if tb.Product == nil || tb.Product.Name != "pipeline" {
					t.Fatalf("table %+v: no product", tb)
				}
				out = append(out, tb.Schema+"."+tb.Name+"="+tb.Ident.String())
			}
			return out
		}
		if got := names(); !slices.Equal(got, []string{"crm.accounts=crm.accounts", "crm.leads=crm.leads"}) {
			t.Fatalf("tables %v", got)
		}
		tb, err := svc.Table(ctx, r, "s1", "CRM", "Leads")
		must(t, err)
		if tb.Ident.String() != "crm.leads" || tb.Product.Version != 1 ||
			tb.Product.Summary != "Accounts and leads. (version 1, owner sales_ops, outputs crm.accounts, crm.leads)" {
			t.Fatalf("table %+v %+v", tb, tb.Product)
		}
		// Version 2 drops leads and adds sales.orders.
		fp.publish("pipeline", 2, "crm.accounts", "sales.orders")
		if got := names(); !slices.Equal(got, []string{"crm.accounts=crm.accounts", "sales.orders=sales.orders"}) {
			t.Fatalf("tables of version 2: %v", got)
		}
		if _, err := svc.Table(ctx, r, "s1", "crm", "leads"); floe.KindOf(err) != floe.NotFound {
			t.Fatalf("an output removed from the product: %v", err)
		}
		tb, err = svc.Table(ctx, r, "s1", "sales", "orders")
		must(t, err)
		if tb.Product.Version != 2 {
			t.Fatalf("table %+v", tb)
		}
		// Removed from the share by its name.
		_, err = svc.RemoveObject(ctx, alice, "s1", "pipeline")
		must(t, err)
		if got, _ := svc.Tables(ctx, r, "s1"); len(got) != 0 {
			t.Fatalf("after removal: %v", got)
		}
		// In a schema alias; a dropped product shares nothing.
		_, err = svc.AddObject(ctx, admin, "s1", sharing.ObjectSpec{Kind: sharing.ObjectProduct, Name: "pipeline", AliasSchema: "pipeline"})
		must(t, err)
		if got := names(); !slices.Equal(got, []string{"pipeline.accounts=crm.accounts", "pipeline.orders=sales.orders"}) {
			t.Fatalf("aliased tables %v", got)
		}
		if _, err := svc.Table(ctx, r, "s1", "crm", "accounts"); floe.KindOf(err) != floe.NotFound {
			t.Fatalf("the real name behind an alias: %v", err)
		}
		ts, err := svc.Tables(ctx, r, "s1")
		must(t, err)
		if s := ts[0].Product.Summary; strings.Contains(s, "crm.") || strings.Contains(s, "sales.") {
			t.Fatalf("the summary names real names: %q", s)
		}
		fp.mu.Lock()
		delete(fp.m, wh+"/pipeline")
		fp.mu.Unlock()
		if got, err := svc.Tables(ctx, r, "s1"); err != nil || len(got) != 0 {
			t.Fatalf("a dropped product: %v %v", got, err)
		}
	})
}

// A server without data products refuses product objects.
func TestProductObjectsNeedProducts(t *testing.T) {
	e := newEnv(t, t.TempDir()+"/floe.db", sharing.Limits{})
	_, err := e.svc.CreateShare(t.Context(), admin, "s1", "", "")
	must(t, err)
	_, err = e.svc.AddObject(t.Context(), admin, "s1", sharing.ObjectSpec{Kind: sharing.ObjectProduct, Name: "pipeline"})
	wantErr(t, err, floe.Unsupported, "data products cannot be shared")
}
