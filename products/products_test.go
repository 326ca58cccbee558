package products

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/maint"
)

func i64(v int64) *int64 { return &v }

func pipeline() Product {
	return Product{
		Warehouse: "floe", Name: "sales_pipeline", Domain: "sales", Owner: "sales_ops", Description: "Open pipeline by account",
		Terms: []string{"pipeline"},
		Outputs: []Port{
			{Kind: PortView, Namespace: catalog.Namespace{"crm"}, Table: "pipeline_by_account", Columns: map[string]string{"amount": "Deal value in EUR"}},
			{Name: "opps", Namespace: catalog.Namespace{"crm"}, Table: "opportunities"},
		},
		Metrics: []Metric{{Name: "open_pipeline_value", Port: "opps", Expr: "sum(amount)", Filter: "stage NOT IN ('won', 'lost')",
			TimeColumn: "created_at", Grains: []string{"month", "quarter"}, Dimensions: []string{"region", "stage"}}},
		Expectations: []Expectation{
			{Kind: NotNull, Port: "opps", Column: "account_id"},
			{Name: "fresh", Kind: Freshness, Port: "opps", MaxAge: Duration(24 * time.Hour)},
			{Name: "some_rows", Kind: RowCount, Port: "opps", Min: i64(1)},
			{Name: "stages", Kind: AcceptedValues, Port: "opps", Column: "stage", Values: []string{"open", "won", "lost", "it's"}},
			{Name: "ids", Kind: Unique, Port: "opps", Column: "id"},
			{Name: "no_negative", Kind: Assertion, SQL: "SELECT id FROM crm.opportunities WHERE amount < 0;"},
		},
	}
}

func TestValidate(t *testing.T) {
	ok := pipeline()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if ok.Outputs[0].Name != "pipeline_by_account" || ok.Outputs[1].Kind != PortTable || ok.Expectations[0].Name != "not_null_opps_account_id" {
		t.Errorf("defaults not filled: %+v %+v", ok.Outputs, ok.Expectations[0])
	}
	long := strings.Repeat("x", MaxTextLen+1)
	for _, tc := range []struct {
		name string
		edit func(p *Product)
		want string
	}{
		{"bad name", func(p *Product) { p.Name = "Sales Pipeline" }, "invalid product name"},
		{"no owner", func(p *Product) { p.Owner = " " }, "owner is required"},
		{"no outputs", func(p *Product) { p.Outputs = nil }, "publishes no output"},
		{"too many outputs", func(p *Product) { p.Outputs = make([]Port, MaxOutputs+1) }, "at most 64 outputs"},
		{"bad kind", func(p *Product) { p.Outputs[0].Kind = "stream" }, "neither table nor view"},
		{"duplicate port", func(p *Product) { p.Outputs[1].Name = "pipeline_by_account" }, "two outputs are named"},
		{"long description", func(p *Product) { p.Description = long }, "longer than"},
		{"bad utf8", func(p *Product) { p.Domain = "\xff" }, "not valid UTF-8"},
		{"bad column doc name", func(p *Product) { p.Outputs[0].Columns = map[string]string{"a b": "x"} }, "invalid column name"},
		{"metric on unknown port", func(p *Product) { p.Metrics[0].Port = "nope" }, `port "nope" is not an output`},
		{"metric with two statements", func(p *Product) { p.Metrics[0].Expr = "sum(x); DROP TABLE y" }, "without ';'"},
		{"metric unknown grain", func(p *Product) { p.Metrics[0].Grains = []string{"fortnight"} }, "unknown grain"},
		{"grains without time", func(p *Product) { p.Metrics[0].TimeColumn = "" }, "grains need a time_column"},
		{"bad dimension", func(p *Product) { p.Metrics[0].Dimensions = []string{"x;y"} }, "invalid dimension"},
		{"duplicate metric", func(p *Product) { p.Metrics = append(p.Metrics, p.Metrics[0]) }, "two metrics"},
		{"not_null without column", func(p *Product) { p.Expectations[0].Column = "" }, "needs a column"},
		{"freshness without age", func(p *Product) { p.Expectations[1].MaxAge = 0 }, "needs max_age"},
		{"row count without bounds", func(p *Product) { p.Expectations[2].Min = nil }, "needs min, max"},
		{"row count inverted", func(p *Product) { p.Expectations[2].Max = i64(0) }, "above max"},
		{"no values", func(p *Product) { p.Expectations[3].Values = nil }, "needs 1 to"},
		{"two statements", func(p *Product) { p.Expectations[5].SQL = "SELECT 1; SELECT 2" }, "one statement"},
		{"unknown kind", func(p *Product) { p.Expectations[4].Kind = "magic" }, "unknown kind"},
		{"duplicate expectation", func(p *Product) { p.Expectations[2].Name = "fresh" }, "two expectations"},
		{"check too often", func(p *Product) { p.CheckEvery = Duration(time.Second) }, "at least 1m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pipeline()
			tc.edit(&p)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) || floe.KindOf(err) != floe.Invalid {
				t.Fatalf("err %v, want Invalid containing %q", err, tc.want)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "90m": 90 * time.Minute, "0d": 0, "1h30m": 90 * time.Minute} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "-1h", "1.5d", "99999d", "x", "1e3d"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestQueries(t *testing.T) {
	p := pipeline()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	rel := `"floe"."crm"."opportunities"`
	want := map[string]string{
		"not_null_opps_account_id": `SELECT count(*) FROM ` + rel + ` WHERE "account_id" IS NULL`,
		"fresh":                    ``,
		"some_rows":                `SELECT count(*) FROM ` + rel,
		"stages":                   `SELECT count(*) FROM ` + rel + ` WHERE "stage" IS NOT NULL AND CAST("stage" AS VARCHAR) NOT IN ('open', 'won', 'lost', 'it''s')`,
		"ids":                      `SELECT count(*) FROM (SELECT "id" FROM ` + rel + ` WHERE "id" IS NOT NULL GROUP BY "id" HAVING count(*) > 1) AS dup`,
		"no_negative":              `SELECT id FROM crm.opportunities WHERE amount < 0`,
	}
	for _, e := range p.Expectations {
		q, err := p.Query(e)
		if err != nil || q.SQL != want[e.Name] || q.Assertion != (e.Kind == Assertion) {
			t.Errorf("%s: %q %v\nwant %q", e.Name, q.SQL, err, want[e.Name])
		}
	}
	ns := Product{Warehouse: `we"ird`, Outputs: []Port{{Name: "x", Namespace: catalog.Namespace{"a", "b"}, Table: "t"}}}
	if got := ns.Relation(ns.Outputs[0]); got != `"we""ird"."a.b"."t"` {
		t.Errorf("relation %s", got)
	}
}

func TestMetricSQL(t *testing.T) {
	p := pipeline()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  MetricRequest
		want string
		err  string
	}{
		{"total", MetricRequest{Metric: "open_pipeline_value"},
			`SELECT (sum(amount)) AS "open_pipeline_value" FROM "floe"."crm"."opportunities" WHERE (stage NOT IN ('won', 'lost'))`, ""},
		{"by month and region", MetricRequest{Metric: "open_pipeline_value", Grain: "month", Dimensions: []string{"region"}},
			`SELECT CAST(date_trunc('month', "created_at") AS DATE) AS "month", "region", (sum(amount)) AS "open_pipeline_value" FROM "floe"."crm"."opportunities" WHERE (stage NOT IN ('won', 'lost')) GROUP BY CAST(date_trunc('month', "created_at") AS DATE), "region" ORDER BY 1, 2`, ""},
		{"unknown metric", MetricRequest{Metric: "revenue"}, "", `no metric "revenue"`},
		{"grain not allowed", MetricRequest{Metric: "open_pipeline_value", Grain: "day"}, "", `not "day"`},
		{"dimension not allowed", MetricRequest{Metric: "open_pipeline_value", Dimensions: []string{"email"}}, "", `cannot be grouped by "email"`},
		{"injection as dimension", MetricRequest{Metric: "open_pipeline_value", Dimensions: []string{`region"; DROP TABLE x; --`}}, "", "cannot be grouped by"},
		{"dimension twice", MetricRequest{Metric: "open_pipeline_value", Dimensions: []string{"region", "region"}}, "", "asked twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.MetricSQL(tc.req)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %s %v\nwant %s", got, err, tc.want)
			}
		})
	}
}

// memStore is a products.Store in memory for the service's tests.
type memStore struct {
	mu   sync.Mutex
	vers map[string][]Product
	runs []CheckRun
}

func (m *memStore) PutProductVersion(_ context.Context, p Product, keep, max int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.vers[p.Name]
	if len(vs)+1 != p.Version {
		return floe.E(floe.Conflict, "data product", "version")
	}
	m.vers[p.Name] = append(vs, p)
	return nil
}

func (m *memStore) ProductVersion(_ context.Context, _, name string, v int) (Product, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.vers[name]
	if len(vs) == 0 || v > len(vs) {
		return Product{}, floe.E(floe.NotFound, "data product", "no %s", name)
	}
	if v == 0 {
		v = len(vs)
	}
	return vs[v-1], nil
}

func (m *memStore) ProductVersions(context.Context, string, string) ([]Product, error) {
	return nil, nil
}
func (m *memStore) Products(context.Context, string) ([]Product, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Product
	for _, vs := range m.vers {
		out = append(out, vs[len(vs)-1])
	}
	return out, nil
}
func (m *memStore) DropProduct(context.Context, string, string) error { return nil }
func (m *memStore) AddCheckRun(_ context.Context, r CheckRun, _ int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs = append(m.runs, r)
	return nil
}
func (m *memStore) CheckRuns(context.Context, string, string, int) ([]CheckRun, error) {
	return m.runs, nil
}

// fakeQuerier answers by the SQL's substring.
type fakeQuerier struct {
	mu      sync.Mutex
	answers []answer // the first whose key the SQL contains
	as      []string
}

type answer struct {
	key  string
	rows [][]*string
}

func (f *fakeQuerier) QueryAs(_ context.Context, as authz.Subject, sql string, maxRows int) ([][]*string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.as = append(f.as, as.Principal)
	for _, a := range f.answers {
		if k, v := a.key, a.rows; strings.Contains(sql, k) {
			if len(v) > maxRows {
				return v[:maxRows], true, nil
			}
			return v, false, nil
		}
	}
	return nil, false, errors.New("permission denied: SELECT on crm.opportunities")
}

// fakeOutputs has tables with columns, and records annotations.
type fakeOutputs struct {
	nsProps map[string]map[string]string
	at      time.Time
	cols    map[string][]string // by table name
	notes   map[string]Annotation
}

func (f *fakeOutputs) Columns(_ context.Context, _ string, p Port) ([]string, error) {
	c, ok := f.cols[p.Table]
	if !ok {
		return nil, floe.E(floe.NotFound, "table", "table %s does not exist", p.Table)
	}
	return c, nil
}

func (f *fakeOutputs) AnnotateNamespace(_ context.Context, _ string, ns catalog.Namespace, set map[string]string, remove []string) error {
	if f.nsProps == nil {
		f.nsProps = map[string]map[string]string{}
	}
	p := f.nsProps[ns.String()]
	if p == nil {
		p = map[string]string{}
		f.nsProps[ns.String()] = p
	}
	maps.Copy(p, set)
	for _, k := range remove {
		delete(p, k)
	}
	return nil
}

func (f *fakeOutputs) CommittedAt(context.Context, string, Port) (time.Time, error) { return f.at, nil }

func (f *fakeOutputs) Annotate(_ context.Context, _ string, p Port, a Annotation) error {
	if _, ok := f.cols[p.Table]; !ok {
		return floe.E(floe.NotFound, "table", "gone")
	}
	f.notes[p.Table] = a
	return nil
}

// fakeAuthz grants privileges by principal and table name, and keeps tags
// and grants.
type fakeAuthz struct {
	privs  map[string][]string          // "principal" -> "PRIV table"
	tags   map[string]map[string]string // table -> tags
	grants map[string]authz.Grant       // by grantee and privilege
}

func newAuthz(privs map[string][]string) *fakeAuthz {
	return &fakeAuthz{privs: privs, tags: map[string]map[string]string{}, grants: map[string]authz.Grant{}}
}

func (f *fakeAuthz) SetTags(_ context.Context, t authz.TagTarget, tags map[string]string) error {
	if f.tags[t.On.Name] == nil {
		f.tags[t.On.Name] = map[string]string{}
	}
	maps.Copy(f.tags[t.On.Name], tags)
	return nil
}

func (f *fakeAuthz) DeleteTags(_ context.Context, t authz.TagTarget, keys ...string) error {
	for _, k := range keys {
		delete(f.tags[t.On.Name], k)
	}
	return nil
}

func grantKey(g authz.Grant) string {
	return g.Grantee.String() + " " + g.Privilege.String() + " " + g.TagExpr
}

func (f *fakeAuthz) Grant(_ context.Context, g authz.Grant) (authz.Grant, error) {
	e, err := authz.ParseExpr(g.TagExpr)
	if err != nil {
		return g, err
	}
	g.TagExpr, g.ID = e.String(), grantKey(g)
	f.grants[g.ID] = g
	return g, nil
}

func (f *fakeAuthz) Revoke(_ context.Context, g authz.Grant) error {
	e, err := authz.ParseExpr(g.TagExpr)
	if err != nil {
		return err
	}
	g.TagExpr = e.String()
	if _, ok := f.grants[grantKey(g)]; !ok {
		return floe.E(floe.NotFound, "grant", "no such grant")
	}
	delete(f.grants, grantKey(g))
	return nil
}

func (f *fakeAuthz) ListGrants(_ context.Context, keep func(*authz.Grant) bool) ([]authz.Grant, error) {
	var out []authz.Grant
	for _, g := range f.grants {
		if keep(&g) {
			out = append(out, g)
		}
	}
	return out, nil
}

func (f *fakeAuthz) Check(_ context.Context, sub authz.Subject, priv authz.Privilege, s authz.Securable) error {
	if sub.Admin {
		return nil
	}
	for _, g := range f.privs[sub.Principal] {
		if g == priv.String()+" "+s.Name {
			return nil
		}
	}
	return floe.E(floe.Forbidden, "privilege", "principal %q lacks %s on %s", sub.Principal, priv, s.Name)
}

func str(s string) *string { return &s }

func newTestService(now time.Time, q Querier, outs *fakeOutputs, az *fakeAuthz) (*Service, *memStore) {
	st := &memStore{vers: map[string][]Product{}}
	return New(Options{Store: st, Querier: q, Outputs: outs, Authz: az, Now: func() time.Time { return now },
		Subject: func(_ context.Context, name string) (authz.Subject, error) {
			if name == "gone" {
				return authz.Subject{}, floe.E(floe.NotFound, "principal", "principal %q does not exist", name)
			}
			return authz.Subject{Principal: name}, nil
		}}), st
}

func crmOutputs(now time.Time) *fakeOutputs {
	return &fakeOutputs{at: now.Add(-2 * time.Hour), notes: map[string]Annotation{}, cols: map[string][]string{
		"pipeline_by_account": {"account_id", "amount"}, "opportunities": {"id", "account_id", "amount", "stage", "created_at"}}}
}

func TestCheck(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	one := func(v string) [][]*string { return [][]*string{{str(v)}} }
	q := &fakeQuerier{answers: []answer{
		{`"account_id" IS NULL`, one("0")},
		{"NOT IN ('open'", one("0")},
		{"HAVING count(*) > 1", one("2")},
		{"amount < 0", [][]*string{{str("7")}, {str("9")}, {str("11")}, {str("12")}, {str("13")}, {str("14")}}},
		{`FROM "floe"."crm".`, one("42")},
	}}
	owner := authz.Subject{Principal: "alice"}
	svc, st := newTestService(now, q, crmOutputs(now), newAuthz(map[string][]string{"alice": {"ALTER opportunities", "ALTER pipeline_by_account"}, "bi": {"DESCRIBE opportunities"}}))
	by := Actor{Subject: owner, RequestID: "r1"}
	p, err := svc.Publish(t.Context(), by, pipeline(), 0)
	if err != nil || p.Version != 1 || p.UpdatedBy != "alice" {
		t.Fatalf("publish: %+v %v", p, err)
	}
	if _, err := svc.Publish(t.Context(), by, pipeline(), 0); floe.KindOf(err) != floe.Conflict {
		t.Fatalf("publish over: %v", err)
	}
	run, err := svc.Check(t.Context(), Actor{Subject: authz.Subject{Principal: "bi"}}, "floe", "sales_pipeline")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range run.Results {
		got[r.Expectation] = r.Status + " " + r.Observed
	}
	want := map[string]string{
		"not_null_opps_account_id": "pass 0", "fresh": "pass 2h0m0s", "some_rows": "pass 42",
		"stages": "pass 0", "ids": "fail 2", "no_negative": "fail more than 5 rows",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || run.Status != StatusFail || run.Trigger != "demand" {
		t.Fatalf("results %v (%s)\nwant %v", got, run.Status, want)
	}
	for _, as := range q.as {
		if as != "bi" {
			t.Fatalf("queried as %q, want the checking principal", as)
		}
	}
	if len(st.runs) != 1 || st.runs[0].ID != run.ID {
		t.Fatalf("run not stored: %+v", st.runs)
	}

	// Stale data, a refused query: fail and error, never a pass.
	outs := crmOutputs(now)
	outs.at = now.Add(-48 * time.Hour)
	svc2 := New(Options{Store: st, Querier: &fakeQuerier{}, Outputs: outs, Authz: newAuthz(nil), Now: func() time.Time { return now }})
	run, err = svc2.Check(t.Context(), Actor{Subject: authz.Subject{Principal: "root", Admin: true}}, "floe", "sales_pipeline")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Results {
		switch {
		case r.Expectation == "fresh" && (r.Status != StatusFail || !strings.Contains(r.Detail, "more than the allowed 24h0m0s")):
			t.Errorf("stale: %+v", r)
		case r.Expectation != "fresh" && (r.Status != StatusError || !strings.Contains(r.Detail, "permission denied")):
			t.Errorf("refused query: %+v", r)
		}
	}
	if run.Status != StatusFail {
		t.Errorf("status %s, want fail", run.Status)
	}
	if _, err := svc.Check(t.Context(), by, "floe", "ghost"); !IsNotFound(err) {
		t.Errorf("unknown product: %v", err)
	}
}

// TestGovernance: publishing needs ALTER on every output and existing
// documented columns, and writes nothing otherwise; a product is visible
// only with DESCRIBE on one of its outputs, and looks the same as a
// missing one otherwise; the context lands in the outputs' properties.
func TestGovernance(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	outs := crmOutputs(now)
	az := newAuthz(map[string][]string{"alice": {"ALTER opportunities", "ALTER pipeline_by_account", "DESCRIBE opportunities", "MANAGE_GRANTS opportunities", "MANAGE_GRANTS pipeline_by_account"},
		"half": {"ALTER opportunities"}, "bi": {"DESCRIBE pipeline_by_account"}, "viewer": {"DESCRIBE opportunities"}, "nobody": nil})
	svc, st := newTestService(now, &fakeQuerier{}, outs, az)
	alice, half, bi, nobody := Actor{Subject: authz.Subject{Principal: "alice"}}, Actor{Subject: authz.Subject{Principal: "half"}},
		authz.Subject{Principal: "bi"}, authz.Subject{Principal: "nobody"}

	if _, err := svc.Publish(t.Context(), half, pipeline(), 0); floe.KindOf(err) != floe.Forbidden || !strings.Contains(err.Error(), "lacks ALTER on pipeline_by_account") {
		t.Fatalf("publish without ALTER on an output: %v", err)
	}
	bad := pipeline()
	bad.Outputs[1].Columns = map[string]string{"revenue": "x"}
	if _, err := svc.Publish(t.Context(), alice, bad, 0); floe.KindOf(err) != floe.Invalid || !strings.Contains(err.Error(), `no column "revenue"`) {
		t.Fatalf("doc of a missing column: %v", err)
	}
	missing := pipeline()
	missing.Outputs[1].Table = "nope"
	az.privs["alice"] = append(az.privs["alice"], "ALTER nope")
	if _, err := svc.Publish(t.Context(), alice, missing, 0); floe.KindOf(err) != floe.NotFound {
		t.Fatalf("missing output: %v", err)
	}
	if len(st.vers) != 0 || len(outs.notes) != 0 {
		t.Fatalf("refused publications wrote %d products, %d annotations", len(st.vers), len(outs.notes))
	}

	if _, err := svc.Publish(t.Context(), alice, pipeline(), 0); err != nil {
		t.Fatal(err)
	}
	n := outs.notes["pipeline_by_account"]
	if n.Set[PropProduct] != "sales_pipeline" || n.Set[PropOwner] != "sales_ops" || n.Set[PropTerms] != "pipeline" || n.Set[PropComment] != "Open pipeline by account" ||
		n.Set[PropVersion] != "1" || n.Docs["amount"] != "Deal value in EUR" {
		t.Errorf("annotation %+v", n)
	}

	if _, err := svc.Get(t.Context(), bi, "floe", "sales_pipeline", 0); err != nil {
		t.Errorf("DESCRIBE on one output: %v", err)
	}
	_, hiddenErr := svc.Get(t.Context(), nobody, "floe", "sales_pipeline", 0)
	_, missingErr := svc.Get(t.Context(), nobody, "floe", "no_such_product", 0)
	if floe.KindOf(hiddenErr) != floe.NotFound || strings.Replace(hiddenErr.Error(), "sales_pipeline", "no_such_product", 1) != missingErr.Error() {
		t.Errorf("hidden product: %v, missing: %v", hiddenErr, missingErr)
	}
	if ls, _ := svc.List(t.Context(), nobody, "floe"); len(ls) != 0 {
		t.Errorf("nobody lists %d products", len(ls))
	}
	if ls, _ := svc.List(t.Context(), bi, "floe"); len(ls) != 1 {
		t.Errorf("bi lists %d products", len(ls))
	}
	if _, err := svc.Check(t.Context(), Actor{Subject: nobody}, "floe", "sales_pipeline"); floe.KindOf(err) != floe.NotFound {
		t.Errorf("nobody checks: %v", err)
	}

	// The product's tag is on its outputs, its summary on their namespace.
	key := TagKey("sales_pipeline")
	if az.tags["opportunities"][key] != TagValue || az.tags["pipeline_by_account"][key] != TagValue {
		t.Errorf("tags %v", az.tags)
	}
	if d := outs.nsProps["crm"][NamespaceKey("sales_pipeline")]; !strings.HasPrefix(d, "Open pipeline by account (version 1, owner sales_ops") {
		t.Errorf("namespace property %q", d)
	}

	// Grants on the product: DESCRIBE or SELECT, by MANAGE_GRANTS on every output.
	analysts := authz.Grantee{Kind: authz.GranteeRole, Name: "analysts"}
	g, err := svc.Grant(t.Context(), alice, "floe", "sales_pipeline", analysts, authz.Select)
	if err != nil || g.TagExpr != "floe.product.sales_pipeline = output" || g.On.Kind != authz.KindWarehouse || g.On.Warehouse != "floe" {
		t.Fatalf("grant: %+v %v", g, err)
	}
	if _, err := svc.Grant(t.Context(), alice, "floe", "sales_pipeline", analysts, authz.Modify); floe.KindOf(err) != floe.Invalid {
		t.Errorf("grant MODIFY: %v", err)
	}
	if _, err := svc.Grant(t.Context(), Actor{Subject: authz.Subject{Principal: "viewer"}}, "floe", "sales_pipeline", analysts, authz.Select); floe.KindOf(err) != floe.Forbidden {
		t.Errorf("grant without MANAGE_GRANTS: %v", err)
	}
	if gs, err := svc.Grants(t.Context(), bi, "floe", "sales_pipeline"); err != nil || len(gs) != 1 {
		t.Errorf("grants: %+v %v", gs, err)
	}

	// A new version that drops an output takes the context out of it.
	v2 := pipeline()
	v2.Outputs = v2.Outputs[1:]
	v2.Description = ""
	if _, err := svc.Publish(t.Context(), half, v2, 1); floe.KindOf(err) != floe.Forbidden {
		t.Errorf("publish v2 without ALTER on every current output: %v", err)
	}
	if _, err := svc.Publish(t.Context(), alice, v2, 1); err != nil {
		t.Fatal(err)
	}
	if n := outs.notes["pipeline_by_account"]; len(n.Set) != 0 || len(n.Remove) != len(contextKeys) {
		t.Errorf("former output keeps the context: %+v", n)
	}
	if n := outs.notes["opportunities"]; n.Set[PropVersion] != "2" || !slices.Contains(n.Remove, PropDescription) {
		t.Errorf("v2 annotation %+v", n)
	}
	if len(az.tags["pipeline_by_account"]) != 0 || az.tags["opportunities"][key] != TagValue {
		t.Errorf("v2 tags %v", az.tags)
	}
	if err := svc.Drop(t.Context(), Actor{Subject: authz.Subject{Principal: "viewer"}}, "floe", "sales_pipeline"); floe.KindOf(err) != floe.Forbidden {
		t.Errorf("drop without ALTER: %v", err)
	}
	if _, err := svc.Get(t.Context(), bi, "floe", "sales_pipeline", 0); floe.KindOf(err) != floe.NotFound {
		t.Errorf("bi still sees the product after its output left it: %v", err)
	}
	if err := svc.Drop(t.Context(), alice, "floe", "sales_pipeline"); err != nil {
		t.Fatal(err)
	}
	if n := outs.notes["opportunities"]; len(n.Set) != 0 {
		t.Errorf("dropped product's context stays: %+v", n)
	}
	if len(az.tags["opportunities"]) != 0 || len(az.tags["pipeline_by_account"]) != 0 || len(az.grants) != 0 {
		t.Errorf("dropped product's tags %v or grants %v stay", az.tags, az.grants)
	}
	if _, ok := outs.nsProps["crm"][NamespaceKey("sales_pipeline")]; ok {
		t.Errorf("dropped product stays in the namespace's properties")
	}
}

// fakeLeases grants each lease to the first holder until released.
type fakeLeases struct {
	mu   sync.Mutex
	held map[string]string
}

func (f *fakeLeases) AcquireLease(_ context.Context, name, holder string, ttl time.Duration) (maint.Lease, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h, ok := f.held[name]; ok && h != holder {
		return maint.Lease{}, false, nil
	}
	f.held[name] = holder
	return maint.Lease{Name: name, Holder: holder}, true, nil
}

func (f *fakeLeases) RenewLease(context.Context, maint.Lease, time.Duration) error { return nil }

func (f *fakeLeases) ReleaseLease(_ context.Context, l maint.Lease) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.held, l.Name)
	return nil
}

// TestSchedule: a product with check_every is checked as its publisher
// when due and not again before; a publisher that is gone makes a run in
// error; a lease held elsewhere skips it.
func TestSchedule(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	clock := now
	q := &fakeQuerier{answers: []answer{{"count", [][]*string{{str("0")}}}}}
	outs := crmOutputs(now)
	st := &memStore{vers: map[string][]Product{}}
	svc := New(Options{Store: st, Querier: q, Outputs: outs, Authz: newAuthz(map[string][]string{"alice": {"ALTER opportunities"}}), Now: func() time.Time { return clock },
		Subject: func(_ context.Context, name string) (authz.Subject, error) {
			if name == "gone" {
				return authz.Subject{}, errors.New("principal is disabled")
			}
			return authz.Subject{Principal: name}, nil
		}})
	p := Product{Warehouse: "floe", Name: "opps", Owner: "alice", CheckEvery: Duration(time.Hour),
		Outputs:      []Port{{Namespace: catalog.Namespace{"crm"}, Table: "opportunities"}},
		Expectations: []Expectation{{Kind: NotNull, Port: "opportunities", Column: "id"}}}
	if _, err := svc.Publish(t.Context(), Actor{Subject: authz.Subject{Principal: "alice"}}, p, 0); err != nil {
		t.Fatal(err)
	}
	leases := &fakeLeases{held: map[string]string{}}
	for _, tc := range []struct {
		advance time.Duration
		want    int
	}{{0, 1}, {30 * time.Minute, 0}, {31 * time.Minute, 1}} {
		clock = clock.Add(tc.advance)
		if n, err := svc.RunDue(t.Context(), leases, "node-a"); err != nil || n != tc.want {
			t.Fatalf("after %v: ran %d %v, want %d", tc.advance, n, err, tc.want)
		}
	}
	if len(st.runs) != 2 || st.runs[1].Trigger != "schedule" || st.runs[1].By != "alice" || q.as[0] != "alice" {
		t.Fatalf("runs %+v, queried as %v", st.runs, q.as)
	}
	clock = clock.Add(2 * time.Hour)
	leases.held["product-check/floe/opps"] = "node-b"
	if n, _ := svc.RunDue(t.Context(), leases, "node-a"); n != 0 {
		t.Errorf("ran %d under another node's lease", n)
	}
	delete(leases.held, "product-check/floe/opps")
	st.vers["opps"][0].UpdatedBy = "gone"
	if n, _ := svc.RunDue(t.Context(), leases, "node-a"); n != 1 {
		t.Fatal("not run")
	}
	last := st.runs[len(st.runs)-1]
	if last.Status != StatusError || !strings.Contains(last.Results[0].Detail, "principal is disabled") {
		t.Errorf("run of a gone publisher: %+v", last)
	}
}
