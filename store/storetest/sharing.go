package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/revoke"
	"github.com/floe-lake/floe/sharing"
)

// testSharing: shares, objects, recipients, tokens and grants round-trip;
// names are unique without regard to case; limits hold; rotation bounds
// the old tokens' life and revocation records token revocations.
func testSharing(t *testing.T, e *env) {
	now := e.clock.Now().UTC().Truncate(time.Microsecond)
	sh := sharing.ShareInfo{ID: "sh1", Name: "Sales", Warehouse: "floe", Owner: "alice", Comment: "c", CreatedAt: now}
	must(t, e.s.CreateShare(e.ctx, sh, 2))
	wantErr(t, e.s.CreateShare(e.ctx, sharing.ShareInfo{ID: "sh2", Name: "SALES", Warehouse: "floe", Owner: "bob", CreatedAt: now}, 2),
		floe.AlreadyExists, "share", `share "SALES" already exists`)
	must(t, e.s.CreateShare(e.ctx, sharing.ShareInfo{ID: "sh2", Name: "b", Warehouse: "floe", Owner: "bob", CreatedAt: now}, 2))
	wantErr(t, e.s.CreateShare(e.ctx, sharing.ShareInfo{ID: "sh3", Name: "c", Warehouse: "floe", CreatedAt: now}, 2),
		floe.Unprocessable, "shares", "limit reached: at most 2 shares (setting sharing.max_shares)")
	got, err := e.s.ShareByName(e.ctx, "sales")
	must(t, err)
	if got != sh {
		t.Fatalf("ShareByName = %+v, want %+v", got, sh)
	}
	_, err = e.s.ShareByName(e.ctx, "nope")
	wantErr(t, err, floe.NotFound, "share", `share "nope" does not exist`)

	o := sharing.Object{ID: "o1", ShareID: "sh1", Kind: sharing.ObjectTable, Namespace: catalog.Namespace{"crm", "emea"}, Name: "accounts",
		AliasSchema: "crm", History: true, PartitionFilter: "region = 'x'", AddedBy: "alice", CreatedAt: now}
	must(t, e.s.AddShareObject(e.ctx, o, 2))
	same := o
	same.ID = "o2"
	wantErr(t, e.s.AddShareObject(e.ctx, same, 2), floe.AlreadyExists, "share object", "")
	ns := sharing.Object{ID: "o3", ShareID: "sh1", Kind: sharing.ObjectNamespace, Namespace: catalog.Namespace{"sales"}, AddedBy: "alice", CreatedAt: now}
	must(t, e.s.AddShareObject(e.ctx, ns, 2))
	wantErr(t, e.s.AddShareObject(e.ctx, sharing.Object{ID: "o4", ShareID: "sh1", Kind: sharing.ObjectView, Namespace: catalog.Namespace{"x"},
		Name: "v", CreatedAt: now}, 2), floe.Unprocessable, "objects per share", "")
	objs, err := e.s.ShareObjects(e.ctx, "sh1")
	must(t, err)
	if len(objs) != 2 || objs[0].ID != "o1" || !slices.Equal(objs[0].Namespace, o.Namespace) || !objs[0].History ||
		objs[0].PartitionFilter != o.PartitionFilter || objs[1].Kind != sharing.ObjectNamespace || objs[1].History {
		t.Fatalf("ShareObjects = %+v", objs)
	}

	exp := now.Add(48 * time.Hour)
	r := sharing.RecipientInfo{ID: "r1", Name: "Acme", Owner: "alice", Properties: map[string]string{"org": "ACME"},
		AllowedCIDRs: []string{"10.0.0.0/8", "192.0.2.1/32"}, ExpiresAt: exp, CreatedAt: now}
	t1 := sharing.TokenInfo{ID: "t1", RecipientID: "r1", Hash: "h1", CreatedAt: now, ExpiresAt: exp}
	must(t, e.s.CreateRecipient(e.ctx, r, t1, 1))
	wantErr(t, e.s.CreateRecipient(e.ctx, sharing.RecipientInfo{ID: "r2", Name: "ACME", CreatedAt: now},
		sharing.TokenInfo{ID: "t9", RecipientID: "r2", Hash: "h9", CreatedAt: now}, 5), floe.AlreadyExists, "recipient", "")
	wantErr(t, e.s.CreateRecipient(e.ctx, sharing.RecipientInfo{ID: "r2", Name: "globex", CreatedAt: now},
		sharing.TokenInfo{ID: "t9", RecipientID: "r2", Hash: "h9", CreatedAt: now}, 1), floe.Unprocessable, "recipients", "")
	tok, rec, err := e.s.TokenByHash(e.ctx, "h1")
	must(t, err)
	if tok != t1 || rec.Name != "Acme" || rec.Properties["org"] != "ACME" || !slices.Equal(rec.AllowedCIDRs, r.AllowedCIDRs) || !rec.ExpiresAt.Equal(exp) {
		t.Fatalf("TokenByHash = %+v, %+v", tok, rec)
	}
	_, _, err = e.s.TokenByHash(e.ctx, "H1")
	wantErr(t, err, floe.NotFound, "token", "")

	// Rotation with a grace: the old token expires at its end.
	t2 := sharing.TokenInfo{ID: "t2", RecipientID: "r1", Hash: "h2", CreatedAt: now, ExpiresAt: exp}
	must(t, e.s.RotateToken(e.ctx, t2, now.Add(time.Hour), 2))
	old, err := e.s.Token(e.ctx, "t1")
	must(t, err)
	if !old.ExpiresAt.Equal(now.Add(time.Hour)) || !old.RevokedAt.IsZero() {
		t.Fatalf("old token after rotation = %+v", old)
	}
	wantErr(t, e.s.RotateToken(e.ctx, sharing.TokenInfo{ID: "t3", RecipientID: "r1", Hash: "h3", CreatedAt: now}, now.Add(time.Hour), 2),
		floe.Unprocessable, "tokens per recipient", "")
	// An immediate rotation revokes and records a revocation per token.
	v0, err := e.s.RevocationVersion(e.ctx)
	must(t, err)
	must(t, e.s.RotateToken(e.ctx, sharing.TokenInfo{ID: "t3", RecipientID: "r1", Hash: "h3", CreatedAt: now}, now, 2))
	revs, err := e.s.Revocations(e.ctx, v0)
	must(t, err)
	var subjects []string
	for _, rv := range revs {
		if rv.Kind == revoke.Token {
			subjects = append(subjects, rv.Subject)
		}
	}
	slices.Sort(subjects)
	if !slices.Equal(subjects, []string{"t1", "t2"}) {
		t.Fatalf("token revocations %v, want [t1 t2]", subjects)
	}
	ts, err := e.s.RecipientTokens(e.ctx, "r1")
	must(t, err)
	if len(ts) != 3 || ts[0].ID != "t3" && ts[2].ID != "t3" {
		t.Fatalf("RecipientTokens = %+v", ts)
	}
	ids, err := e.s.RevokeTokens(e.ctx, "r1", "t3")
	must(t, err)
	if !slices.Equal(ids, []string{"t3"}) {
		t.Fatalf("RevokeTokens = %v", ids)
	}
	_, err = e.s.RevokeTokens(e.ctx, "r1", "")
	wantErr(t, err, floe.NotFound, "token", "")

	must(t, e.s.GrantShare(e.ctx, sharing.GrantInfo{ShareID: "sh1", Share: "Sales", RecipientID: "r1", Recipient: "Acme", CreatedBy: "alice", CreatedAt: now}))
	wantErr(t, e.s.GrantShare(e.ctx, sharing.GrantInfo{ShareID: "sh1", RecipientID: "r1", CreatedAt: now}), floe.AlreadyExists, "share grant", "")
	gs, err := e.s.ShareGrants(e.ctx, "SALES", "")
	must(t, err)
	if len(gs) != 1 || gs[0].Recipient != "Acme" || gs[0].ShareID != "sh1" || gs[0].CreatedBy != "alice" {
		t.Fatalf("ShareGrants = %+v", gs)
	}
	if gs, _ := e.s.ShareGrants(e.ctx, "", "acme"); len(gs) != 1 {
		t.Fatalf("ShareGrants by recipient = %+v", gs)
	}
	v1, err := e.s.RevocationVersion(e.ctx)
	must(t, err)
	must(t, e.s.RevokeShare(e.ctx, "sales", "ACME", []string{sharing.CredentialPrincipal("Acme")}))
	revs, err = e.s.Revocations(e.ctx, v1)
	must(t, err)
	if len(revs) != 1 || revs[0].Kind != revoke.Grant || revs[0].Subject != "recipient:Acme" {
		t.Fatalf("revocations of a share revoke = %+v", revs)
	}
	wantErr(t, e.s.RevokeShare(e.ctx, "sales", "acme", nil), floe.NotFound, "share grant", "")
	must(t, e.s.GrantShare(e.ctx, sharing.GrantInfo{ShareID: "sh1", RecipientID: "r1", CreatedAt: now}))
	must(t, e.s.RemoveShareObject(e.ctx, "sh1", "o1", nil))
	wantErr(t, e.s.RemoveShareObject(e.ctx, "sh1", "o1", nil), floe.NotFound, "share object", "")
	must(t, e.s.DropShare(e.ctx, "sh1", nil))
	if objs, _ := e.s.ShareObjects(e.ctx, "sh1"); len(objs) != 0 {
		t.Fatalf("objects of a dropped share: %+v", objs)
	}
	if gs, _ := e.s.ShareGrants(e.ctx, "", "acme"); len(gs) != 0 {
		t.Fatalf("grants of a dropped share: %+v", gs)
	}
	wantErr(t, e.s.DropShare(e.ctx, "sh1", nil), floe.NotFound, "share", "")
	ls, err := e.s.ListShares(e.ctx)
	must(t, err)
	if len(ls) != 1 || ls[0].Name != "b" {
		t.Fatalf("ListShares = %+v", ls)
	}
}
