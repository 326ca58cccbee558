package sharing_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/revoke"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/sharing/deltasharing"
	"github.com/floe-lake/floe/store/sqlstore"
)

const wh = "floe"

var (
	t0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	admin = authz.Subject{Principal: "admin", Admin: true}
	alice = authz.Subject{PrincipalID: "id-alice", Principal: "alice"}
	bob   = authz.Subject{PrincipalID: "id-bob", Principal: "bob"}
	local = netip.MustParseAddr("127.0.0.1")
)

// env is a sharing service over a real store and catalog, with tables
// crm.accounts (partitioned by region and day(at)), crm.leads, and the
// namespace sales holding sales.orders.
type env struct {
	svc   *sharing.Service
	st    *sqlstore.Store
	cat   *catalog.Catalog
	authz *authz.Authorizer
	clock *fakeclock.Clock
	dsn   string
}

// backends are the stores the tests run on: SQLite always, PostgreSQL when
// FLOE_TEST_PG_DSN is set.
var backends = []struct {
	name string
	dsn  func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "floe.db") }},
	{"postgres", func(t *testing.T) string { return pgtest.Fresh(t, pgtest.ServerDSN(t)) }},
}

func eachBackend(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, newEnv(t, b.dsn(t), sharing.Limits{})) })
	}
}

func newEnv(t testing.TB, dsn string, limits sharing.Limits) *env {
	t.Helper()
	ctx := t.Context()
	clock := fakeclock.New(t0)
	st, err := sqlstore.Open(ctx, dsn, sqlstore.Options{Now: clock.Now})
	must(t, err)
	t.Cleanup(func() { st.Close() })
	dir := t.TempDir()
	objs, err := bucket.New(bucket.Options{Buckets: map[string]string{wh: filepath.Join(dir, "wh")}, TempDir: filepath.Join(dir, "staging")})
	must(t, err)
	t.Cleanup(func() { objs.Close() })
	must(t, st.PutWarehouse(ctx, catalog.Warehouse{Name: wh, Location: "s3://" + wh}))
	cat := catalog.New(st, objs.FileIO(), catalog.Options{})
	for _, ns := range []string{"crm", "sales"} {
		must(t, cat.CreateNamespace(ctx, wh, catalog.Namespace{ns}, nil))
	}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz},
	)
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.IdentityTransform{}, Name: "region"},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Transform: iceberg.DayTransform{}, Name: "at_day"})
	for _, tb := range []struct {
		ns, name string
		spec     *iceberg.PartitionSpec
	}{{"crm", "accounts", &spec}, {"crm", "leads", nil}, {"sales", "orders", nil}} {
		_, err := cat.CreateTable(ctx, wh, catalog.Namespace{tb.ns}, catalog.CreateTableRequest{Name: tb.name, Schema: sc, Spec: tb.spec})
		must(t, err)
	}
	az := authz.New(st, authz.Options{Now: clock.Now})
	svc := sharing.New(sharing.Options{Store: st, Catalog: cat, Authz: az, Limits: limits, DefaultWarehouse: wh, Now: clock.Now,
		FilterColumns: deltasharing.FilterColumns})
	return &env{svc: svc, st: st, cat: cat, authz: az, clock: clock, dsn: dsn}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails unless err is of kind and its public message contains msg.
func wantErr(t *testing.T, err error, kind floe.Kind, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s containing %q", kind, msg)
	}
	if floe.KindOf(err) != kind || !strings.Contains(floe.PublicMessage(err), msg) {
		t.Fatalf("error %v (%s), want %s containing %q", err, floe.KindOf(err), kind, msg)
	}
}

func (e *env) grant(t *testing.T, who authz.Subject, p authz.Privilege, on authz.Securable) {
	t.Helper()
	_, err := e.authz.Grant(t.Context(), authz.Grant{Grantee: authz.Principal(who.Principal), Privilege: p, On: on, CreatedBy: "admin"})
	must(t, err)
}

func accounts() authz.Securable {
	return authz.Table(wh, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"})
}

// TestPrivileges: every privilege rule of sharing, each refused with the
// missing privilege named, then allowed once the privilege is held.
func TestPrivileges(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		steps := []struct {
			name string
			fn   func() error
			kind floe.Kind // 0 (Internal) means success
			msg  string
		}{
			{"no CREATE_SHARE", func() error { _, err := e.svc.CreateShare(ctx, alice, "s1", "", ""); return err },
				floe.Forbidden, `principal "alice" lacks CREATE_SHARE on warehouse "floe"`},
			{"recipient without CREATE_SHARE", func() error {
				_, _, err := e.svc.CreateRecipient(ctx, bob, sharing.RecipientSpec{Name: "acme"})
				return err
			}, floe.Forbidden, `principal "bob" lacks CREATE_SHARE on warehouse "floe"`},
			{"grant CREATE_SHARE", func() error { e.grant(t, alice, authz.CreateShare, authz.Warehouse(wh)); return nil }, 0, ""},
			{"CREATE_SHARE is a warehouse privilege", func() error {
				_, err := e.authz.Grant(ctx, authz.Grant{Grantee: authz.Principal("bob"), Privilege: authz.CreateShare, On: accounts()})
				return err
			}, floe.Invalid, "CREATE_SHARE is granted on a warehouse only"},
			{"create share", func() error { _, err := e.svc.CreateShare(ctx, alice, "s1", "", "q1 data"); return err }, 0, ""},
			{"duplicate share, any case", func() error { _, err := e.svc.CreateShare(ctx, admin, "S1", "", ""); return err },
				floe.AlreadyExists, `share "S1" already exists`},
			{"add a table it cannot grant", func() error {
				_, err := e.svc.AddObject(ctx, alice, "s1", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.accounts"})
				return err
			}, floe.Forbidden, `principal "alice" lacks MANAGE_GRANTS on table "crm.accounts"`},
			{"SELECT alone is not enough", func() error {
				e.grant(t, alice, authz.Select, accounts())
				_, err := e.svc.AddObject(ctx, alice, "s1", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.accounts"})
				return err
			}, floe.Forbidden, "requires the right to grant SELECT on it"},
			{"add a table it can grant", func() error {
				e.grant(t, alice, authz.ManageGrants, accounts())
				_, err := e.svc.AddObject(ctx, alice, "s1", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.accounts", History: true})
				return err
			}, 0, ""},
			{"add a namespace it cannot grant", func() error {
				_, err := e.svc.AddObject(ctx, alice, "s1", sharing.ObjectSpec{Kind: sharing.ObjectNamespace, Name: "sales"})
				return err
			}, floe.Forbidden, `principal "alice" lacks MANAGE_GRANTS on namespace "sales"`},
			{"add to someone else's share", func() error {
				e.grant(t, bob, authz.ManageGrants, authz.Table(wh, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "leads"}))
				_, err := e.svc.AddObject(ctx, bob, "s1", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.leads"})
				return err
			}, floe.Forbidden, `principal "bob" does not own share "s1" (owner "alice")`},
			{"create recipient", func() error {
				_, _, err := e.svc.CreateRecipient(ctx, alice, sharing.RecipientSpec{Name: "acme"})
				return err
			}, 0, ""},
			{"grant someone else's share", func() error { _, err := e.svc.GrantShare(ctx, bob, "s1", "acme"); return err },
				floe.Forbidden, `principal "bob" does not own share "s1"`},
			{"show someone else's share", func() error { _, err := e.svc.Share(ctx, bob, "s1"); return err },
				floe.Forbidden, `does not own share "s1"`},
			{"drop someone else's share", func() error { return e.svc.DropShare(ctx, bob, "s1") },
				floe.Forbidden, `does not own share "s1"`},
			{"rotate someone else's recipient", func() error { _, err := e.svc.RotateToken(ctx, bob, "acme", -1); return err },
				floe.Forbidden, `does not own recipient "acme"`},
			{"revoke someone else's recipient", func() error { _, err := e.svc.RevokeTokens(ctx, bob, "acme", ""); return err },
				floe.Forbidden, `does not own recipient "acme"`},
			{"owner grants", func() error { _, err := e.svc.GrantShare(ctx, alice, "s1", "acme"); return err }, 0, ""},
			{"grant twice", func() error { _, err := e.svc.GrantShare(ctx, admin, "s1", "ACME"); return err },
				floe.AlreadyExists, "already"},
			{"admin revokes", func() error { return e.svc.RevokeShare(ctx, admin, "s1", "acme") }, 0, ""},
		}
		for _, s := range steps {
			err := s.fn()
			if s.kind == 0 {
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				continue
			}
			t.Run(s.name, func(t *testing.T) { wantErr(t, err, s.kind, s.msg) })
			if floe.KindOf(err) == floe.Forbidden && floe.EntityOf(err) != "privilege" {
				t.Errorf("%s: entity %q, want privilege", s.name, floe.EntityOf(err))
			}
		}
		if ls, _ := e.svc.ListShares(ctx, bob); len(ls) != 0 {
			t.Errorf("bob lists %v, want none", ls)
		}
		if ls, _ := e.svc.ListShares(ctx, alice); len(ls) != 1 || ls[0].Owner != "alice" || ls[0].Comment != "q1 data" {
			t.Errorf("alice lists %+v", ls)
		}
	})
}

// setup creates share s1 (crm.accounts as pub.accts with a partition
// filter, the namespace sales) and recipient acme with the share granted,
// and returns acme's credential.
func (e *env) setup(t testing.TB, spec sharing.RecipientSpec) sharing.Credential {
	t.Helper()
	ctx := t.Context()
	_, err := e.svc.CreateShare(ctx, admin, "s1", "", "")
	must(t, err)
	_, err = e.svc.AddObject(ctx, admin, "s1", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.accounts", AliasSchema: "pub",
		AliasName: "accts", PartitionFilter: "region = 'EMEA'"})
	must(t, err)
	_, err = e.svc.AddObject(ctx, admin, "s1", sharing.ObjectSpec{Kind: sharing.ObjectNamespace, Name: "sales", History: true})
	must(t, err)
	if spec.Name == "" {
		spec.Name = "acme"
	}
	_, cred, err := e.svc.CreateRecipient(ctx, admin, spec)
	must(t, err)
	_, err = e.svc.GrantShare(ctx, admin, "s1", spec.Name)
	must(t, err)
	return cred
}

// TestResolve: a recipient sees its shares, the shared tables under their
// aliases (a namespace expanded at call time, so a table created later
// appears), and nothing else.
func TestResolve(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		cred := e.setup(t, sharing.RecipientSpec{})
		r, err := e.svc.Authenticate(ctx, cred.Token, local)
		must(t, err)
		if r.Name != "acme" || r.TokenID != cred.TokenID || r.ID == "" {
			t.Fatalf("recipient %+v", r)
		}
		shares, err := e.svc.Shares(ctx, r)
		must(t, err)
		if len(shares) != 1 || shares[0].Name != "s1" {
			t.Fatalf("shares %+v", shares)
		}
		names := func() []string {
			ts, err := e.svc.Tables(ctx, r, "S1")
			must(t, err)
			var out []string
			for _, tb := range ts {
				out = append(out, tb.Schema+"."+tb.Name+"="+tb.Ident.String())
			}
			return out
		}
		if got := names(); !slices.Equal(got, []string{"pub.accts=crm.accounts", "sales.orders=sales.orders"}) {
			t.Fatalf("tables %v", got)
		}
		sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
		_, err = e.cat.CreateTable(ctx, wh, catalog.Namespace{"sales"}, catalog.CreateTableRequest{Name: "returns", Schema: sc})
		must(t, err)
		if got := names(); !slices.Equal(got, []string{"pub.accts=crm.accounts", "sales.orders=sales.orders", "sales.returns=sales.returns"}) {
			t.Fatalf("tables after a create %v", got)
		}
		tb, err := e.svc.Table(ctx, r, "s1", "PUB", "Accts")
		must(t, err)
		if tb.Ident.String() != "crm.accounts" || tb.PartitionFilter != "region = 'EMEA'" || tb.History || tb.Warehouse != wh {
			t.Errorf("table %+v", tb)
		}
		tb2, err := e.svc.Table(ctx, r, "s1", "sales", "RETURNS")
		must(t, err)
		if tb2.Ident.String() != "sales.returns" || !tb2.History {
			t.Errorf("table %+v", tb2)
		}
		// Every path to something unshared is the same NotFound.
		for _, c := range [][3]string{
			{"s1", "crm", "accounts"},   // the real name behind an alias
			{"s1", "crm", "leads"},      // not shared
			{"s1", "pub", "leads"},      // alias schema, other table
			{"s2", "pub", "accts"},      // no such share
			{"s1", "sales", "..%2f"},    // not a name
			{"s1", "sales/x", "orders"}, // not a name
		} {
			_, err := e.svc.Table(ctx, r, c[0], c[1], c[2])
			if floe.KindOf(err) != floe.NotFound {
				t.Errorf("Table%v: %v, want NotFound", c, err)
			}
		}
		if _, err := e.svc.Tables(ctx, r, "s2"); floe.KindOf(err) != floe.NotFound {
			t.Errorf("Tables(s2): %v", err)
		}
		// Another recipient without a grant sees nothing.
		_, other, err := e.svc.CreateRecipient(ctx, admin, sharing.RecipientSpec{Name: "globex"})
		must(t, err)
		r2, err := e.svc.Authenticate(ctx, other.Token, local)
		must(t, err)
		if ss, _ := e.svc.Shares(ctx, r2); len(ss) != 0 {
			t.Errorf("ungranted recipient sees %v", ss)
		}
		if _, err := e.svc.Tables(ctx, r2, "s1"); floe.KindOf(err) != floe.NotFound {
			t.Errorf("ungranted Tables: %v", err)
		}
		if _, err := e.svc.Table(ctx, r2, "s1", "pub", "accts"); floe.KindOf(err) != floe.NotFound {
			t.Errorf("ungranted Table: %v", err)
		}
		// Revoking the grant and removing an object take effect at once.
		_, err = e.svc.RemoveObject(ctx, admin, "s1", "pub.accts")
		must(t, err)
		if _, err := e.svc.Table(ctx, r, "s1", "pub", "accts"); floe.KindOf(err) != floe.NotFound {
			t.Errorf("removed object: %v", err)
		}
		must(t, e.svc.RevokeShare(ctx, admin, "s1", "acme"))
		if _, err := e.svc.Tables(ctx, r, "s1"); floe.KindOf(err) != floe.NotFound {
			t.Errorf("revoked share: %v", err)
		}
	})
}

// TestObjects: object names, aliases and partition filters are checked
// when added (filters with the Delta Sharing server's parser).
func TestObjects(t *testing.T) {
	e := newEnv(t, filepath.Join(t.TempDir(), "floe.db"), sharing.Limits{})
	ctx := t.Context()
	_, err := e.svc.CreateShare(ctx, admin, "s1", "", "")
	must(t, err)
	_, err = e.svc.AddObject(ctx, admin, "s1", sharing.ObjectSpec{Kind: sharing.ObjectNamespace, Name: "sales"})
	must(t, err)
	for _, c := range []struct {
		name string
		spec sharing.ObjectSpec
		kind floe.Kind
		msg  string
	}{
		{"filter on a non-partition column", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.accounts", PartitionFilter: "id = 1"},
			floe.Invalid, `partition filter names "id", which is not a partition column of "crm.accounts" (its partition columns: at_day, region)`},
		{"malformed filter", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.accounts", PartitionFilter: "region = "},
			floe.Invalid, "partition filter: expected a literal"},
		{"filter too long", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.accounts",
			PartitionFilter: "region = '" + strings.Repeat("x", sharing.MaxPartitionFilterLength) + "'"},
			floe.Invalid, "at most 4096 bytes"},
		{"filter on an unpartitioned table", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.leads", PartitionFilter: "region = 'x'"},
			floe.Invalid, `table "crm.leads" is not partitioned`},
		{"filter on a namespace", sharing.ObjectSpec{Kind: sharing.ObjectNamespace, Name: "crm", PartitionFilter: "region = 'x'"},
			floe.Invalid, "not to a namespace"},
		{"no such table", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.nope"}, floe.NotFound, `table "crm.nope" does not exist`},
		{"a table as a view", sharing.ObjectSpec{Kind: sharing.ObjectView, Name: "crm.leads"}, floe.NotFound, `view "crm.leads" does not exist`},
		{"no such namespace", sharing.ObjectSpec{Kind: sharing.ObjectNamespace, Name: "hr"}, floe.NotFound, ""},
		{"bad alias", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.leads", AliasName: "a b"}, floe.Invalid, "give an alias"},
		{"table into a shared namespace's schema", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.leads", AliasSchema: "sales"},
			floe.AlreadyExists, `schema "sales" of the share is a shared namespace`},
		{"unknown kind", sharing.ObjectSpec{Kind: "index", Name: "crm.leads"}, floe.Invalid, "unknown object kind"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.svc.AddObject(ctx, admin, "s1", c.spec)
			wantErr(t, err, c.kind, c.msg)
		})
	}
	// Columns compare case-insensitively, as the Delta Sharing server
	// enforces the filter.
	_, err = e.svc.AddObject(ctx, admin, "s1", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.accounts",
		PartitionFilter: "REGION IN ('EMEA', 'APAC') AND \"at_day\" >= 19000"})
	must(t, err)
	_, err = e.svc.AddObject(ctx, admin, "s1", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.leads", AliasName: "accounts"})
	wantErr(t, err, floe.AlreadyExists, `shows another object as "crm.accounts"`)
	_, err = e.svc.AddObject(ctx, admin, "s1", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.accounts", AliasName: "a2"})
	wantErr(t, err, floe.AlreadyExists, `holds table "crm.accounts" already`)
}

// TestTokens: each way a token must fail does, and only that way.
func TestTokens(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		cred := e.setup(t, sharing.RecipientSpec{ExpiresAt: t0.Add(48 * time.Hour)})
		_, ipCred, err := e.svc.CreateRecipient(ctx, admin, sharing.RecipientSpec{Name: "vpn", AllowedCIDRs: []string{"10.1.0.0/16"}})
		must(t, err)
		if !strings.HasPrefix(cred.Token, sharing.TokenPrefix) || len(cred.Token) != len(sharing.TokenPrefix)+43 {
			t.Fatalf("token shape %d", len(cred.Token))
		}
		auth := func(tok string, from netip.Addr) error { _, err := e.svc.Authenticate(ctx, tok, from); return err }
		must(t, auth(cred.Token, local))
		flip := []byte(cred.Token)
		flip[len(flip)-2] ^= 1
		for _, c := range []struct {
			name, tok string
			from      netip.Addr
			kind      floe.Kind
		}{
			{"wrong token", sharing.TokenPrefix + strings.Repeat("A", 43), local, floe.Unauthenticated},
			{"one bit off", string(flip), local, floe.Unauthenticated},
			{"malformed", "Bearer " + cred.Token, local, floe.Unauthenticated},
			{"empty", "", local, floe.Unauthenticated},
			{"the hash instead", sharing.HashToken(cred.Token), local, floe.Unauthenticated},
			{"outside the allowlist", ipCred.Token, local, floe.Forbidden},
			{"no address", ipCred.Token, netip.Addr{}, floe.Forbidden},
		} {
			t.Run(c.name, func(t *testing.T) {
				if err := auth(c.tok, c.from); floe.KindOf(err) != c.kind {
					t.Errorf("Authenticate: %v, want %s", err, c.kind)
				}
			})
		}
		must(t, auth(ipCred.Token, netip.MustParseAddr("10.1.2.3")))
		// The allowlist travels with the recipient, into what the protocol
		// servers vend.
		vpn, err := e.svc.Authenticate(ctx, ipCred.Token, netip.MustParseAddr("10.1.2.3"))
		must(t, err)
		if fmt.Sprint(vpn.AllowedCIDRs) != "[10.1.0.0/16]" {
			t.Fatalf("authenticated recipient's allowlist %v", vpn.AllowedCIDRs)
		}

		// Rotation with a grace period: both work until it ends.
		r0, err := e.svc.Authenticate(ctx, cred.Token, local)
		must(t, err)
		cred2, err := e.svc.RotateToken(ctx, admin, "acme", 30*time.Minute)
		must(t, err)
		must(t, auth(cred.Token, local))
		must(t, auth(cred2.Token, local))
		e.clock.Advance(29 * time.Minute)
		must(t, auth(cred.Token, local))
		e.clock.Advance(time.Minute)
		if err := auth(cred.Token, local); floe.KindOf(err) != floe.Unauthenticated {
			t.Errorf("old token after the grace: %v", err)
		}
		// r0 carries the expiry of its authentication (48 h); the store
		// says the token is dead now.
		if rev, err := e.svc.Revoked(ctx, r0); err != nil || !rev {
			t.Errorf("Revoked after the grace = %v, %v", rev, err)
		}
		must(t, auth(cred2.Token, local))

		// Rotation with no grace revokes the old token at once.
		r2, err := e.svc.Authenticate(ctx, cred2.Token, local)
		must(t, err)
		cred3, err := e.svc.RotateToken(ctx, admin, "acme", 0)
		must(t, err)
		if err := auth(cred2.Token, local); floe.KindOf(err) != floe.Unauthenticated {
			t.Errorf("old token after an immediate rotation: %v", err)
		}
		if rev, err := e.svc.Revoked(ctx, r2); err != nil || !rev {
			t.Errorf("Revoked after an immediate rotation = %v, %v", rev, err)
		}

		// Revocation is immediate.
		r3, err := e.svc.Authenticate(ctx, cred3.Token, local)
		must(t, err)
		if rev, err := e.svc.Revoked(ctx, r3); err != nil || rev {
			t.Errorf("Revoked before revocation = %v, %v", rev, err)
		}
		ids, err := e.svc.RevokeTokens(ctx, admin, "acme", "")
		must(t, err)
		if !slices.Equal(ids, []string{cred3.TokenID}) {
			t.Errorf("revoked %v, want [%s]", ids, cred3.TokenID)
		}
		if err := auth(cred3.Token, local); floe.KindOf(err) != floe.Unauthenticated {
			t.Errorf("revoked token: %v", err)
		}
		if rev, err := e.svc.Revoked(ctx, r3); err != nil || !rev {
			t.Errorf("Revoked after revocation = %v, %v", rev, err)
		}

		// Expiry of the recipient.
		cred4, err := e.svc.RotateToken(ctx, admin, "acme", 0)
		must(t, err)
		r4, err := e.svc.Authenticate(ctx, cred4.Token, local)
		must(t, err)
		if !r4.TokenExpiry.Equal(t0.Add(48 * time.Hour)) {
			t.Errorf("token expiry %v", r4.TokenExpiry)
		}
		e.clock.Advance(48 * time.Hour)
		if err := auth(cred4.Token, local); floe.KindOf(err) != floe.Unauthenticated {
			t.Errorf("expired token: %v", err)
		}
		if rev, _ := e.svc.Revoked(ctx, r4); !rev {
			t.Errorf("Revoked after expiry = false")
		}
	})
}

// TestRevocationReachesCredentials: a storage credential vended with a
// recipient token's id (vend.Session.TokenID) is refused by the revoke
// checks of another node within a second of the token's revocation.
func TestRevocationReachesCredentials(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			e := newEnv(t, dsn, sharing.Limits{})
			ctx := t.Context()
			cred := e.setup(t, sharing.RecipientSpec{})
			r, err := e.svc.Authenticate(ctx, cred.Token, local)
			must(t, err)
			// Another node: its own store connection and revocation list.
			node, err := sqlstore.Open(ctx, dsn, sqlstore.Options{Now: e.clock.Now})
			must(t, err)
			t.Cleanup(func() { node.Close() })
			list, err := revoke.New(ctx, node, revoke.Options{Interval: 100 * time.Millisecond, Now: e.clock.Now})
			must(t, err)
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); list.Run(rctx) }()
			t.Cleanup(func() { cancel(); <-done })
			sess, other := mintSession(t, node, r, list.Version())
			// The service answers Revoked from the node's list, without I/O.
			svc := sharing.New(sharing.Options{Store: e.st, Catalog: e.cat, Authz: e.authz, Revocations: list, DefaultWarehouse: wh})
			check := func() error {
				return list.Credential(sess.TokenID, sess.Principal, sess.PrincipalID, sess.Table, sess.Epoch)
			}
			must(t, check())
			if rev, err := svc.Revoked(ctx, r); err != nil || rev {
				t.Fatalf("Revoked before = %v, %v", rev, err)
			}
			start := time.Now()
			_, err = e.svc.RevokeTokens(ctx, admin, "acme", "")
			must(t, err)
			for check() == nil {
				if time.Since(start) > time.Second {
					t.Fatal("credential still accepted 1 s after the revocation")
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Logf("refused after %v", time.Since(start))
			if err := check(); !errors.Is(err, revoke.ErrTokenRevoked) {
				t.Errorf("credential check: %v, want ErrTokenRevoked", err)
			}
			if rev, err := svc.Revoked(ctx, r); err != nil || !rev {
				t.Errorf("Revoked after = %v, %v", rev, err)
			}
			// A credential of another token of the same recipient is not refused.
			if err := list.Credential(other.TokenID, other.Principal, other.PrincipalID, other.Table, other.Epoch); err != nil {
				t.Errorf("another token's credential: %v", err)
			}
			// Revoking the share refuses what was vended to the recipient
			// before, whatever its token; what is vended after is not refused.
			must(t, e.svc.RevokeShare(ctx, admin, "s1", "acme"))
			start = time.Now()
			for list.Credential(other.TokenID, other.Principal, other.PrincipalID, other.Table, other.Epoch) == nil {
				if time.Since(start) > time.Second {
					t.Fatal("credential still accepted 1 s after the share was revoked")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := list.Credential(other.TokenID, other.Principal, other.PrincipalID, other.Table, other.Epoch); !errors.Is(err, revoke.ErrGrantRevoked) {
				t.Errorf("credential after the share's revocation: %v, want ErrGrantRevoked", err)
			}
			if err := list.Credential(other.TokenID, other.Principal, other.PrincipalID, other.Table, list.Version()); err != nil {
				t.Errorf("credential minted after the revocation: %v", err)
			}
		})
	}
}

// TestPartitionFilterNeedsAnEnforcer: without a protocol server that
// enforces partition filters (Options.FilterColumns), none is accepted.
func TestPartitionFilterNeedsAnEnforcer(t *testing.T) {
	e := newEnv(t, filepath.Join(t.TempDir(), "floe.db"), sharing.Limits{})
	ctx := t.Context()
	svc := sharing.New(sharing.Options{Store: e.st, Catalog: e.cat, Authz: e.authz, DefaultWarehouse: wh})
	_, err := svc.CreateShare(ctx, admin, "s1", "", "")
	must(t, err)
	_, err = svc.AddObject(ctx, admin, "s1", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.accounts", PartitionFilter: "region = 'EMEA'"})
	wantErr(t, err, floe.Unsupported, "enforces partition filters")
}
