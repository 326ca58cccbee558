package restcat_test

import (
	"context"
	"testing"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/internal/testkit"
)

// TestGrantChangesReachOtherNodesAtOnce: two nodes share one PostgreSQL
// store. Node B has the policy cached from an allowed request; a revoke
// made through node A denies B's very next request, and a new grant
// allows the one after. (Each request reads the policy version with the
// token's state; this shows that read is fresh on every request.)
func TestGrantChangesReachOtherNodesAtOnce(t *testing.T) {
	dsn := pgtest.Fresh(t, pgtest.ServerDSN(t))
	shared := t.TempDir()
	opt := func(c *app.Config) { c.Store, c.DataDir, c.PublicURL = dsn, shared, "http://floe.nodes.test" }
	a, b := testkit.Start(t, opt), testkit.Start(t, opt)
	a.CreateTable(t, "crm", "accounts")
	tok := principal(t, a, "analyst")
	path := b.P("/namespaces/crm/tables/accounts")
	mustStatus(t, b.DoAs(t, tok, "GET", path, nil), 403)
	g := grant(t, a, authz.Grant{Grantee: authz.Principal("analyst"), Privilege: authz.Select,
		On: authz.Table(a.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"})})
	for range 3 {
		mustStatus(t, b.DoAs(t, tok, "GET", path, nil), 200)
	}
	if err := a.App.Authz().RevokeID(context.Background(), g.ID); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, b.DoAs(t, tok, "GET", path, nil), 403)
	grant(t, a, authz.Grant{Grantee: authz.Principal("analyst"), Privilege: authz.Describe,
		On: authz.NamespaceOf(a.Warehouse, catalog.Namespace{"crm"}), AllTables: true})
	mustStatus(t, b.DoAs(t, tok, "GET", path, nil), 200)
}
