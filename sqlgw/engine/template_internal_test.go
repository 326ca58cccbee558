package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// TestParseExecuteTemplate: the engine's own parser of EXECUTE TEMPLATE
// reads the name and literal arguments, leaves other statements alone,
// and refuses malformed calls with 42601.
func TestParseExecuteTemplate(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		ok   bool
		bad  bool
		name string
		args map[string]templateArg
	}{
		{sql: "SELECT 1"},
		{sql: "EXECUTE stmt(1)"},
		{sql: "EXECUTE TEMPLATE by_segment", ok: true, name: "by_segment", args: map[string]templateArg{}},
		{sql: " /* c */ execute template By_Segment ( segment => 'gold' , n => -1.5e3, f => TRUE, z => null ) ;", ok: true, name: "by_segment",
			args: map[string]templateArg{"segment": {argString, "gold"}, "n": {argNumber, "-1.5e3"}, "f": {argBool, "true"}, "z": {argNull, ""}}},
		{sql: "EXECUTE TEMPLATE t (s => 'it''s')", ok: true, name: "t", args: map[string]templateArg{"s": {argString, "it's"}}},
		{sql: "EXECUTE TEMPLATE t (s => 'x' || 'y')", ok: true, bad: true},
		{sql: "EXECUTE TEMPLATE t (s => 'x'); DROP TABLE a", ok: true, bad: true},
		{sql: "EXECUTE TEMPLATE t (s => (SELECT 1))", ok: true, bad: true},
		{sql: "EXECUTE TEMPLATE t (s => 'unterminated)", ok: true, bad: true},
		{sql: "EXECUTE TEMPLATE t (s => 1, s => 2)", ok: true, bad: true},
		{sql: "EXECUTE TEMPLATE t (s = 1)", ok: true, bad: true},
		{sql: "EXECUTE TEMPLATE t (s => col)", ok: true, bad: true},
		{sql: "EXECUTE TEMPLATE t (s => 1e999)", ok: true, bad: true},
		{sql: "EXECUTE TEMPLATE t (s => 1", ok: true, bad: true},
		{sql: "EXECUTE TEMPLATE", ok: true, bad: true},
		{sql: "EXECUTE TEMPLATE 'x'", ok: true, bad: true},
	} {
		call, ok, err := parseExecuteTemplate(tc.sql)
		if ok != tc.ok {
			t.Errorf("%q: ok %v, want %v", tc.sql, ok, tc.ok)
			continue
		}
		var pe *pgwire.Error
		if tc.bad {
			if !errors.As(err, &pe) || pe.Code != pgwire.CodeSyntaxError {
				t.Errorf("%q: %v, want 42601", tc.sql, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		if !ok {
			continue
		}
		if call.name != tc.name || len(call.args) != len(tc.args) {
			t.Errorf("%q: %+v, want %s %v", tc.sql, call, tc.name, tc.args)
		}
		for k, v := range tc.args {
			if call.args[k] != v {
				t.Errorf("%q: argument %s = %+v, want %+v", tc.sql, k, call.args[k], v)
			}
		}
	}
}

// FuzzParseExecuteTemplate: the parser never panics, and what it accepts
// has a valid name and only literal arguments.
func FuzzParseExecuteTemplate(f *testing.F) {
	for _, s := range []string{"EXECUTE TEMPLATE t (a => 'x', b => 1)", "EXECUTE TEMPLATE t", "execute template x (y => null);", "EXECUTE TEMPLATE t (a => 'it''s'", "EXECUTE TEMPLATE t (a => -.5e+3)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		call, ok, err := parseExecuteTemplate(sql)
		if !ok || err != nil {
			return
		}
		if call.name == "" || !isIdentStart(call.name[0]) {
			t.Fatalf("%q: name %q", sql, call.name)
		}
		for k, a := range call.args {
			if k == "" || a.kind < argString || a.kind > argNull {
				t.Fatalf("%q: argument %q %+v", sql, k, a)
			}
		}
	})
}

// customRoom is listRoom with the retailer's customers and the
// advertiser's exposures under the custom rule.
func customRoom() *cleanroom.Room {
	room := listRoom()
	for i := range room.Collaboration.Tables[:2] {
		room.Collaboration.Tables[i].AnalysisRule = cleanroom.RuleCustom
	}
	return room
}

func bySegment(sql string, approvals ...string) *cleanroom.Template {
	t := &cleanroom.Template{Name: "by_segment", SQL: sql, AllowedMembers: []string{"advertiser"},
		Params: []cleanroom.TemplateParam{{Name: "segment", Type: cleanroom.ParamVarchar}, {Name: "n", Type: cleanroom.ParamBigint}}}
	for _, a := range approvals {
		t.Approvals = append(t.Approvals, cleanroom.Approval{Member: a})
	}
	return t
}

const segmentSQL = "SELECT c.segment, e.campaign FROM customers c JOIN exposures e ON c.email = e.email WHERE c.segment = $segment AND length(e.campaign) > $n"

// TestTemplateBindsTypedLiterals: parameters become typed literals on the
// tree (a value that looks like SQL stays one string), every declared
// parameter must be given and typed right, and a template may use no
// parameter it does not declare.
func TestTemplateBindsTypedLiterals(t *testing.T) {
	d := newTreeDB(t)
	inject := "gold' OR '1'='1"
	stmt := d.parse(t, segmentSQL)
	tmpl := bySegment(segmentSQL, "retailer", "advertiser")
	if err := bindTemplate(stmt, tmpl, map[string]templateArg{"segment": {argString, inject}, "n": {argNumber, "3"}}); err != nil {
		t.Fatal(err)
	}
	out := d.render(t, stmt)
	if !strings.Contains(out, "CAST('gold'' OR ''1''=''1' AS VARCHAR)") || !strings.Contains(out, "CAST('3' AS BIGINT)") || strings.Contains(out, "$") {
		t.Fatalf("bound: %s", out)
	}
	for _, tc := range []struct {
		name, sql string
		args      map[string]templateArg
		code      string
	}{
		{"missing", segmentSQL, map[string]templateArg{"segment": {argString, "gold"}}, pgwire.CodeUndefinedParameter},
		{"extra", segmentSQL, map[string]templateArg{"segment": {argString, "gold"}, "n": {argNumber, "1"}, "x": {argNumber, "1"}}, pgwire.CodeUndefinedParameter},
		{"string for bigint", segmentSQL, map[string]templateArg{"segment": {argString, "gold"}, "n": {argString, "1"}}, pgwire.CodeInvalidParameterValue},
		{"fraction for bigint", segmentSQL, map[string]templateArg{"segment": {argString, "gold"}, "n": {argNumber, "1.5"}}, pgwire.CodeInvalidParameterValue},
		{"number for varchar", segmentSQL, map[string]templateArg{"segment": {argNumber, "1"}, "n": {argNumber, "1"}}, pgwire.CodeInvalidParameterValue},
		{"positional parameter", "SELECT c.segment FROM customers c WHERE c.segment = $1", map[string]templateArg{"segment": {argString, "gold"}, "n": {argNumber, "1"}}, pgwire.CodeInsufficientPrivilege},
		{"undeclared parameter", "SELECT c.segment FROM customers c WHERE c.segment = $other", map[string]templateArg{"segment": {argString, "gold"}, "n": {argNumber, "1"}}, pgwire.CodeInsufficientPrivilege},
	} {
		err := bindTemplate(d.parse(t, tc.sql), bySegment(tc.sql), tc.args)
		var pe *pgwire.Error
		if !errors.As(err, &pe) || pe.Code != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
}

// TestTemplateRule: a template reads custom-rule tables only, each
// approved by its owner; raw SQL on a custom-rule table is refused;
// under differential privacy a template must pass the aggregation checks
// and is planned for noise.
func TestTemplateRule(t *testing.T) {
	d := newTreeDB(t)
	args := map[string]templateArg{"segment": {argString, "gold"}, "n": {argNumber, "3"}}
	check := func(sql string, room *cleanroom.Room, tmpl *cleanroom.Template) (*roomCheck, error) {
		t.Helper()
		stmt := d.parse(t, sql)
		if tmpl != nil {
			tmpl.SQL = sql
			if err := bindTemplate(stmt, tmpl, args); err != nil {
				t.Fatal(err)
			}
		}
		return checkRoomWith(stmt, room, tmpl)
	}
	if c, err := check(segmentSQL, customRoom(), bySegment("", "retailer", "advertiser")); err != nil || c.hidden() != 0 {
		t.Fatalf("approved template: %v", err)
	}
	for _, tc := range []struct {
		name, sql string
		room      *cleanroom.Room
		tmpl      *cleanroom.Template
		rule      string
	}{
		{"not approved by the advertiser", segmentSQL, customRoom(), bySegment("", "retailer"), ruleTemplate},
		{"approved by neither owner", segmentSQL, customRoom(), bySegment("", "outsider"), ruleTemplate},
		{"raw SQL on custom tables", "SELECT count(*) FROM customers c JOIN exposures e ON c.email = e.email", customRoom(), nil, ruleTables},
		{"a template reading list tables", "SELECT c.segment FROM customers c JOIN exposures e ON c.email = e.email WHERE c.segment = $segment AND $n > 0", listRoom(), bySegment("", "retailer", "advertiser"), ruleTemplate},
		{"a template with a subquery", "SELECT c.segment FROM customers c WHERE c.segment = $segment AND c.email IN (SELECT email FROM exposures) AND $n > 0", customRoom(), bySegment("", "retailer", "advertiser"), ruleStatement},
		{"a template with time travel", "SELECT customers.segment FROM customers AT (VERSION => 1) WHERE customers.segment = $segment AND $n > 0", customRoom(), bySegment("", "retailer", "advertiser"), ruleTables},
	} {
		_, err := check(tc.sql, tc.room, tc.tmpl)
		var pe *pgwire.Error
		if !errors.As(err, &pe) || pe.Code != pgwire.CodeInsufficientPrivilege || !strings.Contains(pe.Message, "("+tc.rule+")") {
			t.Errorf("%s: %v, want 42501 %s", tc.name, err, tc.rule)
		}
	}

	// Under differential privacy: raw rows are refused, an aggregation is
	// planned for noise.
	dp := customRoom()
	dp.Collaboration.Privacy = &cleanroom.Privacy{Mechanism: cleanroom.Laplace, Epsilon: 1}
	for i := range dp.Collaboration.Tables[:2] {
		dp.Collaboration.Tables[i].Rule.MinIdentifiers = 2
		dp.Collaboration.Tables[i].Dimensions = dp.Collaboration.Tables[i].Columns
		dp.Collaboration.Tables[i].Columns = nil
	}
	if _, err := check(segmentSQL, dp, bySegment("", "retailer", "advertiser")); err == nil {
		t.Fatal("a template listing rows ran under differential privacy")
	}
	agg := "SELECT e.campaign, count(DISTINCT c.customer_id) FROM customers c JOIN exposures e ON c.email = e.email WHERE c.segment = $segment AND e.campaign <> 'x' GROUP BY e.campaign"
	tmpl := bySegment("", "retailer", "advertiser")
	tmpl.Params = tmpl.Params[:1]
	delete(args, "n")
	c, err := check(agg, dp, tmpl)
	if err != nil || c.dp == nil || c.dp.values != 3 || c.hidden() != 2 {
		t.Fatalf("an aggregation template under DP: %+v %v", c, err)
	}
}
