package authz_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// The issue 5 benchmark: a decision with 10,000 grants and 1,000 tags in the
// store costs at most 20 µs p99 in-process.
const (
	scaleGrants = 10_000
	scaleTags   = 1_000
	p99Budget   = 20 * time.Microsecond
)

// scale is a generated population: 2 warehouses of 100 top-level namespaces
// with 5 children each and 10 tables per namespace, 500 principals in 50
// roles (3 roles each), and a mix of table, namespace, AllTables, warehouse
// and tag-based grants, some with filters.
type scale struct {
	principals []string
	roles      []string
	members    []authz.Membership
	grants     []authz.Grant
	tags       []authz.Tag
	tables     []authz.Securable
	namespaces []authz.Securable
}

var (
	warehouses  = []string{"wh", "wh2"}
	domains     = []string{"sales", "crm", "hr", "finance", "ops", "web", "ml", "iot", "legal", "it"}
	sensitivity = []string{"low", "medium", "high"}
)

func genScale(nGrants, nTags int) *scale {
	r := rand.New(rand.NewPCG(1, 2))
	sc := &scale{}
	for i := range 50 {
		sc.roles = append(sc.roles, fmt.Sprintf("role-%02d", i))
	}
	for i := range 500 {
		p := fmt.Sprintf("principal-%03d", i)
		sc.principals = append(sc.principals, p)
		for _, j := range r.Perm(len(sc.roles))[:3] {
			sc.members = append(sc.members, authz.Membership{Role: sc.roles[j], Principal: p})
		}
	}
	for _, wh := range warehouses {
		for i := range 100 {
			top := catalog.Namespace{fmt.Sprintf("ns%03d", i)}
			for _, n := range append([]catalog.Namespace{top}, func() (c []catalog.Namespace) {
				for j := range 5 {
					c = append(c, catalog.Namespace{top[0], fmt.Sprintf("sub%d", j)})
				}
				return c
			}()...) {
				sc.namespaces = append(sc.namespaces, authz.NamespaceOf(wh, n))
				for k := range 10 {
					sc.tables = append(sc.tables, authz.Table(wh, catalog.Ident{Namespace: n, Name: fmt.Sprintf("t%d", k)}))
				}
			}
		}
	}
	grantee := func() authz.Grantee {
		if r.IntN(3) == 0 {
			return authz.Role(sc.roles[r.IntN(len(sc.roles))])
		}
		return authz.Principal(sc.principals[r.IntN(len(sc.principals))])
	}
	tablePrivs := []authz.Privilege{authz.Describe, authz.Select, authz.Modify, authz.Drop, authz.ManageGrants}
	seen := map[string]bool{}
	for len(sc.grants) < nGrants {
		var g authz.Grant
		switch x := r.IntN(100); {
		case x < 60:
			g = authz.Grant{Grantee: grantee(), Privilege: tablePrivs[r.IntN(len(tablePrivs))], On: sc.tables[r.IntN(len(sc.tables))]}
			if g.Privilege == authz.Select && r.IntN(5) == 0 {
				g.Filter = &authz.DataFilter{RowFilter: "region = 'EU'", ExcludeColumns: []string{"ssn"}}
			}
		case x < 80:
			g = authz.Grant{Grantee: grantee(), Privilege: authz.AllPrivileges()[r.IntN(8)], On: sc.namespaces[r.IntN(len(sc.namespaces))]}
			g.AllTables = g.Privilege == authz.Select || g.Privilege == authz.Modify || r.IntN(2) == 0
		case x < 85:
			g = authz.Grant{Grantee: grantee(), Privilege: authz.AllPrivileges()[r.IntN(8)], On: authz.Warehouse(warehouses[r.IntN(2)])}
			g.AllTables = g.Privilege == authz.Select || g.Privilege == authz.Modify || r.IntN(2) == 0
		default:
			expr := fmt.Sprintf("domain = %s AND sensitivity IN (%s, %s)", domains[r.IntN(len(domains))],
				sensitivity[r.IntN(3)], sensitivity[r.IntN(3)])
			if r.IntN(4) == 0 {
				expr = fmt.Sprintf("(domain = %s OR owner = team%d) AND sensitivity != high", domains[r.IntN(len(domains))], r.IntN(20))
			}
			g = authz.Grant{Grantee: grantee(), Privilege: tablePrivs[r.IntN(len(tablePrivs))], On: authz.Warehouse(warehouses[r.IntN(2)]), TagExpr: expr}
		}
		if k := g.Key(); !seen[k] {
			seen[k] = true
			sc.grants = append(sc.grants, g)
		}
	}
	tagSeen := map[string]bool{}
	for len(sc.tags) < nTags {
		var t authz.Tag
		switch x := r.IntN(100); {
		case x < 20:
			t = authz.Tag{On: sc.namespaces[r.IntN(len(sc.namespaces))], Key: "domain", Value: domains[r.IntN(len(domains))]}
		case x < 30:
			t = authz.Tag{On: sc.namespaces[r.IntN(len(sc.namespaces))], Key: "owner", Value: fmt.Sprintf("team%d", r.IntN(20))}
		case x < 90:
			t = authz.Tag{On: sc.tables[r.IntN(len(sc.tables))], Key: "sensitivity", Value: sensitivity[r.IntN(3)]}
		default:
			t = authz.Tag{On: sc.tables[r.IntN(len(sc.tables))], Column: fmt.Sprintf("c%d", r.IntN(5)), Key: "sensitivity", Value: "high"}
		}
		k := t.On.String() + "/" + t.Column + "/" + t.Key
		if !tagSeen[k] {
			tagSeen[k] = true
			sc.tags = append(sc.tags, t)
		}
	}
	return sc
}

func (sc *scale) snapshot(t testing.TB) *authz.Snapshot {
	snap := &authz.Snapshot{Version: 1, Members: sc.members, Tags: sc.tags}
	for _, r := range sc.roles {
		snap.Roles = append(snap.Roles, authz.RoleInfo{Name: r})
	}
	for _, g := range sc.grants {
		g.ID = g.Key()
		snap.Grants = append(snap.Grants, g)
	}
	return snap
}

// checkLatencies runs n random decisions and returns their sorted latencies.
func checkLatencies(p *authz.Policy, sc *scale, n int, seed uint64) []time.Duration {
	r := rand.New(rand.NewPCG(seed, 7))
	type req struct {
		sub  authz.Subject
		priv authz.Privilege
		s    authz.Securable
	}
	reqs := make([]req, n)
	for i := range reqs {
		reqs[i].sub = authz.Subject{Principal: sc.principals[r.IntN(len(sc.principals))]}
		reqs[i].priv = authz.AllPrivileges()[r.IntN(3)]
		if r.IntN(10) < 7 {
			reqs[i].s = sc.tables[r.IntN(len(sc.tables))]
		} else {
			reqs[i].s = sc.namespaces[r.IntN(len(sc.namespaces))]
		}
	}
	lat := make([]time.Duration, n)
	for i, q := range reqs {
		start := time.Now()
		_ = p.Check(q.sub, q.priv, q.s)
		lat[i] = time.Since(start)
	}
	slices.Sort(lat)
	return lat
}

func pct(lat []time.Duration, q float64) time.Duration { return lat[int(float64(len(lat)-1)*q)] }

// BenchmarkCheck measures Policy.Check over random subjects, privileges and
// securables with 10,000 grants and 1,000 tags, reporting p50 and p99.
func BenchmarkCheck(b *testing.B) {
	sc := genScale(scaleGrants, scaleTags)
	p, err := authz.NewPolicy(sc.snapshot(b))
	if err != nil {
		b.Fatal(err)
	}
	var all []time.Duration
	i := uint64(0)
	for b.Loop() {
		i++
		all = append(all, checkLatencies(p, sc, 1, i)...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(pct(all, 0.50).Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(pct(all, 0.99).Nanoseconds()), "p99-ns")
}

// BenchmarkNewPolicy measures indexing the snapshot of 10,000 grants and
// 1,000 tags (the reload after a version change).
func BenchmarkNewPolicy(b *testing.B) {
	snap := genScale(scaleGrants, scaleTags).snapshot(b)
	for b.Loop() {
		if _, err := authz.NewPolicy(snap); err != nil {
			b.Fatal(err)
		}
	}
}

// TestScaleFromSQLite stores 10,000 grants and 1,000 tags in SQLite, loads
// the policy through an Authorizer (load time reported), and checks the p99
// of random decisions (compared with the 20 µs budget in the log only).
func TestScaleFromSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: -short")
	}
	ctx := context.Background()
	db := openSQLite(t)
	nGrants, nTags := scaleGrants, scaleTags
	if raceEnabled {
		nGrants, nTags = 2_000, 200 // the race detector makes each write ~10x slower
	}
	sc := genScale(nGrants, nTags)
	a := authz.New(db, authz.Options{})
	start := time.Now()
	for _, r := range sc.roles {
		must(t, a.CreateRole(ctx, authz.RoleInfo{Name: r}))
	}
	for _, m := range sc.members {
		must(t, a.AddMember(ctx, m.Role, m.Principal))
	}
	for _, g := range sc.grants {
		if _, err := a.Grant(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	targets := map[string]authz.TagTarget{}
	tags := map[string]map[string]string{}
	for _, tg := range sc.tags {
		k := tg.On.String() + "/" + tg.Column
		if tags[k] == nil {
			tags[k] = map[string]string{}
			targets[k] = authz.TagTarget{On: tg.On, Column: tg.Column}
		}
		tags[k][tg.Key] = tg.Value
	}
	for k, m := range tags {
		must(t, a.SetTags(ctx, targets[k], m))
	}
	t.Logf("stored %d grants and %d tags in %v", len(sc.grants), len(sc.tags), time.Since(start).Round(time.Millisecond))

	start = time.Now()
	p, err := a.Policy(ctx)
	must(t, err)
	t.Logf("policy load (read + index): %v: %s", time.Since(start).Round(time.Microsecond), p)
	if p.GrantCount() != nGrants || p.TagCount() != nTags {
		t.Fatalf("loaded %s", p)
	}
	start = time.Now()
	const versionReads = 1000
	for range versionReads {
		if _, err := a.Policy(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("unchanged-version Policy(): %v per call", (time.Since(start) / versionReads).Round(100*time.Nanosecond))

	checkLatencies(p, sc, 10_000, 99) // warm up
	lat := checkLatencies(p, sc, 100_000, 1)
	t.Logf("Check over %d random decisions: p50 %v, p99 %v, max %v", len(lat), pct(lat, 0.5), pct(lat, 0.99), lat[len(lat)-1])
	// The budget is measured by BenchmarkCheck, not asserted here: timings
	// on a shared CI machine are not a test.
	if !raceEnabled && pct(lat, 0.99) > p99Budget {
		t.Logf("note: p99 %v is above the %v budget on this run", pct(lat, 0.99), p99Budget)
	}
}
