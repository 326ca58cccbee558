package storetest

import (
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// testMoveGrantsOn covers MoveGrantsOn, which a rename calls: the grants
// naming the old table (not tag-based ones, not other tables' nor its
// namespace's) and the tags on it and its columns move to the new name in
// one transaction, a moved grant equal to one already on the new name
// merges with it, moved tags replace the new name's tags of the same key,
// and no reader ever sees half of the move.
func testMoveGrantsOn(t *testing.T, e *env) {
	must(t, e.s.CreateRole(e.ctx, authz.RoleInfo{Name: "analysts"}))
	hr, sandbox := catalog.Namespace{"hr"}, catalog.Namespace{"sandbox"}
	from := authz.Table("wh", catalog.Ident{Namespace: hr, Name: "payroll"})
	to := authz.Table("wh", catalog.Ident{Namespace: sandbox, Name: "payroll2"})
	other := authz.Table("wh", catalog.Ident{Namespace: hr, Name: "other"})
	put := func(g authz.Grant) authz.Grant {
		t.Helper()
		g.ID = g.Key()
		must(t, e.s.PutGrant(e.ctx, g))
		return g
	}
	onFrom := []authz.Grant{
		put(authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Select, On: from,
			Filter: &authz.DataFilter{RowFilter: "region = 'EU'"}, CreatedBy: "admin"}),
		put(authz.Grant{Grantee: authz.Role("analysts"), Privilege: authz.Describe, On: from}),
		put(authz.Grant{Grantee: authz.Principal("owner"), Privilege: authz.Drop, On: from}),
	}
	already := put(authz.Grant{Grantee: authz.Principal("owner"), Privilege: authz.Drop, On: to})
	stay := []authz.Grant{
		put(authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Select, On: other}),
		put(authz.Grant{Grantee: authz.Principal("bi"), Privilege: authz.Describe, On: authz.NamespaceOf("wh", hr)}),
		put(authz.Grant{Grantee: authz.Principal("tagger"), Privilege: authz.Select, On: authz.Warehouse("wh"), TagExpr: "sensitivity = low"}),
	}
	must(t, e.s.SetTags(e.ctx, authz.TagTarget{On: from}, map[string]string{"sensitivity": "high", "domain": "hr"}))
	must(t, e.s.SetTags(e.ctx, authz.TagTarget{On: from, Column: "ssn"}, map[string]string{"pii": "yes"}))
	must(t, e.s.SetTags(e.ctx, authz.TagTarget{On: to}, map[string]string{"sensitivity": "low", "keep": "me"}))
	must(t, e.s.SetTags(e.ctx, authz.TagTarget{On: other}, map[string]string{"sensitivity": "high"}))

	grantsOn := func(snap *authz.Snapshot, s authz.Securable) []string {
		var out []string
		for _, g := range snap.Grants {
			if g.TagExpr == "" && g.On.Kind == s.Kind && g.On.Warehouse == s.Warehouse && slices.Equal(g.On.Namespace, s.Namespace) && g.On.Name == s.Name {
				out = append(out, g.Grantee.String()+" "+g.Privilege.String()+" "+g.FilterJSON())
			}
		}
		slices.Sort(out)
		return out
	}
	tagsOn := func(snap *authz.Snapshot, s authz.Securable) map[string]string {
		out := map[string]string{}
		for _, tg := range snap.Tags {
			if tg.On.String() == s.String() && tg.On.Kind == s.Kind {
				out[tg.Column+"/"+tg.Key] = tg.Value
			}
		}
		return out
	}
	before, err := e.s.LoadAuthz(e.ctx)
	must(t, err)
	wantMoved := grantsOn(before, from)
	if len(wantMoved) != 3 {
		t.Fatalf("grants on %s before the move: %v", from, wantMoved)
	}

	// Readers during the move see all of it or none of it.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	torn := make(chan string, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			snap, err := e.s.LoadAuthz(e.ctx)
			if err != nil {
				continue
			}
			f, g := len(grantsOn(snap, from)), len(tagsOn(snap, from))
			if (f == 0) != (g == 0) || (f != 0 && f != 3) || (f == 0 && len(grantsOn(snap, to)) != 3) {
				select {
				case torn <- snap.Grants[0].ID:
				default:
				}
			}
		}
	}()
	v0, err := e.s.AuthzVersion(e.ctx)
	must(t, err)
	n, err := e.s.MoveGrantsOn(e.ctx, from, to)
	close(stop)
	wg.Wait()
	must(t, err)
	select {
	case <-torn:
		t.Error("a reader saw the move half done")
	default:
	}
	if n != 3 {
		t.Errorf("MoveGrantsOn = %d, want 3 (two moved, one merged)", n)
	}
	if v, err := e.s.AuthzVersion(e.ctx); err != nil || v <= v0 {
		t.Errorf("version %d -> %d (%v), want an increase", v0, v, err)
	}

	after, err := e.s.LoadAuthz(e.ctx)
	must(t, err)
	if got := grantsOn(after, from); len(got) != 0 {
		t.Errorf("grants left on %s: %v", from, got)
	}
	if got := grantsOn(after, to); !slices.Equal(got, wantMoved) {
		t.Errorf("grants on %s = %v, want %v", to, got, wantMoved)
	}
	ids := map[string]bool{}
	for _, g := range after.Grants {
		if g.ID != g.Key() {
			t.Errorf("grant %+v keeps a stale id %s (key %s)", g, g.ID, g.Key())
		}
		ids[g.ID] = true
	}
	if !ids[already.ID] {
		t.Errorf("the grant already on %s was lost", to)
	}
	for _, g := range stay {
		if !ids[g.ID] {
			t.Errorf("grant %s, not on %s, was touched", g.Describe(), from)
		}
	}
	for _, g := range onFrom {
		if ids[g.ID] {
			t.Errorf("grant %s still under its old id", g.Describe())
		}
	}
	if len(after.Grants) != len(before.Grants)-1 {
		t.Errorf("%d grants after the move, want %d (one merged)", len(after.Grants), len(before.Grants)-1)
	}
	if got := tagsOn(after, from); len(got) != 0 {
		t.Errorf("tags left on %s: %v", from, got)
	}
	if got, want := tagsOn(after, to), map[string]string{"/sensitivity": "high", "/domain": "hr", "ssn/pii": "yes", "/keep": "me"}; !maps.Equal(got, want) {
		t.Errorf("tags on %s = %v, want %v", to, got, want)
	}
	if got, want := tagsOn(after, other), map[string]string{"/sensitivity": "high"}; !maps.Equal(got, want) {
		t.Errorf("tags on %s = %v, want %v", other, got, want)
	}
	// Nothing left to move.
	if n, err := e.s.MoveGrantsOn(e.ctx, from, to); err != nil || n != 0 {
		t.Errorf("second MoveGrantsOn = %d, %v, want 0", n, err)
	}
}
