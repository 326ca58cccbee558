package cleanroom_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/internal/testkit"
)

// rulesRoom is a running Floe with the collaboration "lists": the
// retailer's customers (id, e-mail, segment) and the advertiser's
// exposures (id, e-mail, campaign), each configured by its owner with
// rule (list or custom).
type rulesRoom struct {
	f                    *testkit.Floe
	svc                  *cleanroom.Service
	admin                *pgx.Conn
	retailer, advertiser authz.Subject
	retailerTok, advTok  string
}

func startRulesRoom(t *testing.T, rule string) *rulesRoom {
	ctx := context.Background()
	f := testkit.Start(t)
	admin := connectT(t, f, "admin", f.Token(t))
	for _, q := range []string{
		"CREATE SCHEMA retail", "CREATE SCHEMA ads",
		"CREATE TABLE retail.customers (customer_id BIGINT, email VARCHAR, segment VARCHAR)",
		"CREATE TABLE ads.exposures (user_id BIGINT, email VARCHAR, campaign VARCHAR)",
		`INSERT INTO retail.customers VALUES (1, 'a@x', 'gold'), (2, 'b@x', 'gold'), (3, 'c@x', 'silver'), (4, 'd@x', 'bronze'),
			(5, 'e@x', 'platinum'), (6, 'f@x', 'silver')`,
		`INSERT INTO ads.exposures VALUES (11, 'a@x', 'spring'), (12, 'c@x', 'spring'), (13, 'd@x', 'autumn'), (14, 'z@x', 'spring'),
			(15, 'e@x', 'autumn'), (16, 'f@x', 'spring')`,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	r := &rulesRoom{f: f, svc: f.App.CleanRooms(), admin: admin}
	r.retailerTok = f.PrincipalToken(t, "retailer")
	r.advTok = f.PrincipalToken(t, "advertiser")
	sub := func(name string) authz.Subject {
		p, err := f.App.Store().PrincipalByName(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return authz.Subject{Principal: p.Name, PrincipalID: p.ID}
	}
	r.retailer, r.advertiser = sub("retailer"), sub("advertiser")
	for _, g := range []struct{ who, ns, tbl string }{{"retailer", "retail", "customers"}, {"advertiser", "ads", "exposures"}} {
		if _, err := f.App.Authz().Grant(ctx, authz.Grant{Grantee: authz.Principal(g.who), Privilege: authz.Select,
			On: authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{g.ns}, Name: g.tbl})}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.svc.Create(ctx, r.retailer, cleanroom.CreateRequest{Name: "lists", Members: []string{"advertiser"}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		by authz.Subject
		t  cleanroom.ConfiguredTable
	}{
		{r.retailer, cleanroom.ConfiguredTable{Name: "customers", Warehouse: f.Warehouse, Namespace: catalog.Namespace{"retail"}, Table: "customers",
			AnalysisRule: rule, JoinKeys: []string{"email"}, Columns: []string{"segment"}, Identifier: "customer_id"}},
		{r.advertiser, cleanroom.ConfiguredTable{Name: "exposures", Warehouse: f.Warehouse, Namespace: catalog.Namespace{"ads"}, Table: "exposures",
			AnalysisRule: rule, JoinKeys: []string{"email"}, Columns: []string{"campaign"}, Identifier: "user_id"}},
	} {
		if _, err := r.svc.ConfigureTable(ctx, c.by, "lists", c.t); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// member connects as the advertiser, in the collaboration.
func (r *rulesRoom) member(t testing.TB) *pgx.Conn {
	c := connectT(t, r.f, "advertiser", r.advTok)
	if _, err := c.Exec(context.Background(), "SET floe.collaboration = 'lists'"); err != nil {
		t.Fatal(err)
	}
	return c
}

func strings1(t testing.TB, c *pgx.Conn, q string, args ...any) []string {
	t.Helper()
	rows, err := c.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// TestListRuleOverlap: under the list rule the advertiser lists the
// retailer's segments of the customers its spring campaign reached: the
// result equals the same query by the administrator over the real tables
// (no threshold: the list rule has none), and selecting identifiers or
// join keys, or one member's table alone, is refused with 42501 and
// logged as denied.
func TestListRuleOverlap(t *testing.T) {
	ctx := context.Background()
	r := startRulesRoom(t, cleanroom.RuleList)
	m := r.member(t)
	got := strings1(t, m, "SELECT DISTINCT c.segment FROM customers c JOIN exposures e ON c.email = e.email WHERE e.campaign = 'spring' ORDER BY 1")
	want := strings1(t, r.admin, "SELECT DISTINCT c.segment FROM retail.customers c JOIN ads.exposures e ON c.email = e.email WHERE e.campaign = 'spring' ORDER BY 1")
	if !slices.Equal(got, want) || !slices.Equal(got, []string{"gold", "silver"}) {
		t.Fatalf("list %v, reference %v", got, want)
	}
	for _, q := range []string{
		"SELECT c.email FROM customers c JOIN exposures e ON c.email = e.email",
		"SELECT CAST(c.customer_id AS VARCHAR) FROM customers c JOIN exposures e ON c.email = e.email",
		"SELECT segment FROM customers",
		"SELECT c.segment FROM customers c JOIN exposures e ON c.email = e.email ORDER BY e.user_id LIMIT 1",
	} {
		if _, err := m.Exec(ctx, q); !isDenied(err, "clean room rule") {
			t.Errorf("%s: %v, want 42501", q, err)
		}
	}
	log, err := r.svc.Log(ctx, r.retailer, "lists", 10)
	if err != nil || len(log) != 5 || log[0].Outcome != cleanroom.OutcomeDenied || log[4].Outcome != cleanroom.OutcomeSuccess || log[4].Rows != 2 || log[4].Suppressed != 0 {
		t.Fatalf("query log: %+v %v", log, err)
	}
}

// TestAnalysisRuleValidation: each rule's definition is checked: the list
// rule has no threshold, row bound, ranges or dimensions and never lists
// a join key; an unknown rule is refused; the aggregation rule still
// needs its identifier and threshold.
func TestAnalysisRuleValidation(t *testing.T) {
	base := func(rule string) cleanroom.ConfiguredTable {
		return cleanroom.ConfiguredTable{Name: "c", Warehouse: "wh", Namespace: catalog.Namespace{"retail"}, Table: "customers",
			AnalysisRule: rule, JoinKeys: []string{"email"}, Columns: []string{"segment"}, Identifier: "customer_id"}
	}
	for _, tc := range []struct {
		name   string
		change func(*cleanroom.ConfiguredTable)
		ok     bool
	}{
		{"list", func(*cleanroom.ConfiguredTable) {}, true},
		{"list without an identifier", func(t *cleanroom.ConfiguredTable) { t.Identifier = "" }, true},
		{"list with a threshold", func(t *cleanroom.ConfiguredTable) { t.Rule.MinIdentifiers = 5 }, false},
		{"list with ranges", func(t *cleanroom.ConfiguredTable) { t.Rule.Ranges = map[string]cleanroom.Range{"segment": {}} }, false},
		{"list with dimensions", func(t *cleanroom.ConfiguredTable) { t.Dimensions = []string{"region"} }, false},
		{"list listing its join key", func(t *cleanroom.ConfiguredTable) { t.Columns = append(t.Columns, "email") }, false},
		{"list listing its identifier", func(t *cleanroom.ConfiguredTable) { t.Columns = append(t.Columns, "customer_id") }, false},
		{"list without join keys", func(t *cleanroom.ConfiguredTable) { t.JoinKeys = nil }, false},
		{"list without columns", func(t *cleanroom.ConfiguredTable) { t.Columns = nil }, false},
		{"custom", func(t *cleanroom.ConfiguredTable) { t.AnalysisRule = cleanroom.RuleCustom }, true},
		{"custom with a threshold of 1", func(t *cleanroom.ConfiguredTable) { t.AnalysisRule = cleanroom.RuleCustom; t.Rule.MinIdentifiers = 1 }, false},
		{"unknown rule", func(t *cleanroom.ConfiguredTable) { t.AnalysisRule = "anything" }, false},
		{"aggregation without a threshold", func(t *cleanroom.ConfiguredTable) { t.AnalysisRule = cleanroom.RuleAggregation }, false},
		{"aggregation without an identifier", func(t *cleanroom.ConfiguredTable) {
			t.AnalysisRule, t.Rule.MinIdentifiers, t.Identifier = cleanroom.RuleAggregation, 3, ""
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := base(cleanroom.RuleList)
			tc.change(&ct)
			if err := ct.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestCustomRuleTemplates: under the custom rule only approved templates
// read the tables. The retailer adds a template listing the campaigns
// that reached customers of a segment; it does not run until the
// advertiser (owner of the other table) approves it; then the advertiser
// runs it with a parameter and gets what the same SQL gives the
// administrator over the real tables; a value that looks like SQL stays a
// value. Raw SQL on the tables, a member the template does not allow, an
// unknown template and a wrongly typed argument are refused. Under
// differential privacy an aggregation template is charged to the budget.
func TestCustomRuleTemplates(t *testing.T) {
	ctx := context.Background()
	r := startRulesRoom(t, cleanroom.RuleCustom)
	m := r.member(t)
	const q = "SELECT DISTINCT e.campaign FROM customers c JOIN exposures e ON c.email = e.email WHERE c.segment = $segment ORDER BY 1"
	if _, err := r.svc.AddTemplate(ctx, r.retailer, "lists", cleanroom.Template{Name: "campaigns_by_segment", SQL: q,
		Params: []cleanroom.TemplateParam{{Name: "segment", Type: cleanroom.ParamVarchar}}, AllowedMembers: []string{"advertiser"}}); err != nil {
		t.Fatal(err)
	}
	run := "EXECUTE TEMPLATE campaigns_by_segment (segment => 'silver')"
	if _, err := m.Exec(ctx, run); !isDenied(err, `not approved by "advertiser"`) {
		t.Fatalf("before the advertiser's approval: %v", err)
	}
	if _, err := r.svc.ApproveTemplate(ctx, r.advertiser, "lists", "campaigns_by_segment"); err != nil {
		t.Fatal(err)
	}
	got := strings1(t, m, run)
	want := strings1(t, r.admin, "SELECT DISTINCT e.campaign FROM retail.customers c JOIN ads.exposures e ON c.email = e.email WHERE c.segment = 'silver' ORDER BY 1")
	if !slices.Equal(got, want) || !slices.Equal(got, []string{"spring"}) {
		t.Fatalf("template %v, reference %v", got, want)
	}
	if got := strings1(t, m, "EXECUTE TEMPLATE campaigns_by_segment (segment => 'silver'' OR ''1''=''1')"); len(got) != 0 {
		t.Fatalf("an injected value matched rows: %v", got)
	}
	for _, tc := range []struct{ sql, code, contains string }{
		{"SELECT DISTINCT e.campaign FROM customers c JOIN exposures e ON c.email = e.email", "42501", "approved templates read it"},
		{"EXECUTE TEMPLATE nope (segment => 'gold')", "42501", "may not run it"},
		{"EXECUTE TEMPLATE campaigns_by_segment (segment => 1)", "22023", "must be a 'string'"},
		{"EXECUTE TEMPLATE campaigns_by_segment", "42P02", "missing"},
	} {
		if _, err := m.Exec(ctx, tc.sql); !hasCode(err, tc.code, tc.contains) {
			t.Errorf("%s: %v, want %s %q", tc.sql, err, tc.code, tc.contains)
		}
	}
	// The retailer is a member but the template does not allow it.
	rc := connectT(t, r.f, "retailer", r.retailerTok)
	if _, err := rc.Exec(ctx, "SET floe.collaboration = 'lists'"); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Exec(ctx, run); !isDenied(err, "may not run it") {
		t.Fatalf("a member the template does not allow: %v", err)
	}
	// Outside a collaboration.
	if _, err := connectT(t, r.f, "advertiser", r.advTok).Exec(ctx, run); !hasCode(err, "42704", "SET floe.collaboration") {
		t.Fatalf("outside a collaboration: %v", err)
	}

	// Differential privacy: the tables declare an identifier threshold and
	// dimensions; a listing template is refused, an aggregation template
	// runs, noised, and is charged.
	for _, c := range []struct {
		by authz.Subject
		t  cleanroom.ConfiguredTable
	}{
		{r.retailer, cleanroom.ConfiguredTable{Name: "customers", Warehouse: r.f.Warehouse, Namespace: catalog.Namespace{"retail"}, Table: "customers",
			AnalysisRule: cleanroom.RuleCustom, JoinKeys: []string{"email"}, Dimensions: []string{"segment"}, Identifier: "customer_id", Rule: cleanroom.AggregationRule{MinIdentifiers: 2}}},
		{r.advertiser, cleanroom.ConfiguredTable{Name: "exposures", Warehouse: r.f.Warehouse, Namespace: catalog.Namespace{"ads"}, Table: "exposures",
			AnalysisRule: cleanroom.RuleCustom, JoinKeys: []string{"email"}, Dimensions: []string{"campaign"}, Identifier: "user_id", Rule: cleanroom.AggregationRule{MinIdentifiers: 2}}},
	} {
		if _, err := r.svc.ConfigureTable(ctx, c.by, "lists", c.t); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.svc.SetPrivacy(ctx, r.retailer, "lists", &cleanroom.Privacy{Mechanism: cleanroom.Laplace, Epsilon: 0.5}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.SetBudget(ctx, r.retailer, "lists", 2, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Exec(ctx, run); !isDenied(err, "differential privacy") && !isDenied(err, "clean room rule") {
		t.Fatalf("a listing template under DP: %v", err)
	}
	if _, err := r.svc.AddTemplate(ctx, r.advertiser, "lists", cleanroom.Template{Name: "reach",
		SQL:    "SELECT e.campaign, count(DISTINCT c.customer_id) AS customers FROM customers c JOIN exposures e ON c.email = e.email WHERE c.segment <> $segment GROUP BY e.campaign",
		Params: []cleanroom.TemplateParam{{Name: "segment", Type: cleanroom.ParamVarchar}}, AllowedMembers: []string{"advertiser"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.ApproveTemplate(ctx, r.retailer, "lists", "reach"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Exec(ctx, "EXECUTE TEMPLATE reach (segment => 'none')"); err != nil {
		t.Fatal(err)
	}
	if b, err := r.svc.Budget(ctx, r.advertiser, "lists"); err != nil || b.Spent != 0.5 {
		t.Fatalf("after one DP template run: %+v %v", b, err)
	}
	log, err := r.svc.Log(ctx, r.retailer, "lists", 1)
	if err != nil || len(log) != 1 || log[0].SQL != "EXECUTE TEMPLATE reach (segment => 'none')" || log[0].Epsilon != 0.5 {
		t.Fatalf("query log: %+v %v", log, err)
	}
}
