package engine

import "testing"

func TestSparkText(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`select "a b", x from "floe"."crm"."accounts"`, "select `a b`, x from `crm`.`accounts`", true},
		{`select * from floe.crm.accounts a join crm.o on a.id = o.id`, "select * from crm.accounts a join crm.o on a.id = o.id", true},
		{`select * from FLOE.crm.t`, "select * from crm.t", true},
		{`select * from "FLOE".crm.t`, "select * from `FLOE`.crm.t", true}, // quoted: another name
		{`select * from other.crm.t`, "select * from other.crm.t", true},
		{`select crm.t.x from crm.t`, "select crm.t.x from crm.t", true},
		{`select 'it''s' from t`, "", false},
		{`select 'a\b' from t`, "", false},
		{`select E'x' from t`, "", false},
		{`select x::int from t`, "", false},
		{`select $1 from t`, "", false},
		{`select "we""ird" from t`, "select `we\"ird` from t", true},
		{"select \"a`b\" from t", "", false},
		{"select `a` from t", "", false},
		{`select 'unterminated from t`, "", false},
		{`select x -- a "comment"` + "\nfrom t", "select x -- a \"comment\"\nfrom t", true},
		{`select /* "c" */ x from t`, `select /* "c" */ x from t`, true},
		{`select x from t where y = 'floe.crm.t'`, `select x from t where y = 'floe.crm.t'`, true},
	} {
		got, ok := sparkText(tc.in, "floe")
		if ok != tc.ok || got != tc.want {
			t.Errorf("sparkText(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzSparkText(f *testing.F) {
	for _, s := range []string{`select "a" from "floe"."b"."c"`, `select 'x' -- c`, "/* x */ select 1", `"`, `'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, ok := sparkText(s, "floe")
		if !ok {
			return
		}
		if len(out) > len(s) {
			t.Fatalf("output longer than input: %q -> %q", s, out)
		}
	})
}
