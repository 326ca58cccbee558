package sharing_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/sharing"
)

func str(s string) *string { return &s }

func TestPartitionFilter(t *testing.T) {
	for _, c := range []struct {
		in, canon string
		cols      []string
		yes, no   []map[string]*string
	}{
		{in: "region = 'EMEA'", canon: "region = 'EMEA'", cols: []string{"region"},
			yes: []map[string]*string{{"region": str("EMEA")}}, no: []map[string]*string{{"region": str("APAC")}, {}}},
		{in: "region in ('a','b') and not year < 2024", canon: "(region IN ('a', 'b') AND (NOT year < 2024))", cols: []string{"region", "year"},
			yes: []map[string]*string{{"region": str("a"), "year": str("2024")}, {"region": str("b"), "year": str("2030")}},
			no:  []map[string]*string{{"region": str("a"), "year": str("999")}, {"region": str("c"), "year": str("2025")}, {"region": str("a")}}},
		{in: `"my col" IS NOT NULL OR x != 1.5e1`, canon: `((NOT "my col" IS NULL) OR x <> 1.5e1)`, cols: []string{"my col", "x"},
			yes: []map[string]*string{{"my col": str("")}, {"x": str("14")}}, no: []map[string]*string{{"x": str("15")}, {}}},
		{in: "name = 'O''Brien' AND (a >= 1 AND (b <= 2 OR c > 3))", canon: "(name = 'O''Brien' AND (a >= 1 AND (b <= 2 OR c > 3)))", cols: []string{"a", "b", "c", "name"},
			yes: []map[string]*string{{"name": str("O'Brien"), "a": str("1"), "b": str("9"), "c": str("4")}}},
		{in: "flag = TRUE", canon: "flag = true", cols: []string{"flag"},
			yes: []map[string]*string{{"flag": str("true")}}, no: []map[string]*string{{"flag": str("false")}}},
	} {
		t.Run(c.in, func(t *testing.T) {
			f, err := sharing.ParsePartitionFilter(c.in)
			must(t, err)
			if got := f.String(); got != c.canon {
				t.Errorf("String() = %q, want %q", got, c.canon)
			}
			if got := f.Columns(); !slices.Equal(got, c.cols) {
				t.Errorf("Columns() = %v, want %v", got, c.cols)
			}
			again, err := sharing.ParsePartitionFilter(f.String())
			must(t, err)
			if again.String() != f.String() {
				t.Errorf("reparsed %q", again.String())
			}
			for _, v := range c.yes {
				if !f.Eval(v) {
					t.Errorf("Eval(%v) = false", v)
				}
			}
			for _, v := range c.no {
				if f.Eval(v) {
					t.Errorf("Eval(%v) = true", v)
				}
			}
		})
	}
	for _, bad := range []string{"", "   ", "region", "region =", "= 'a'", "region = 'a", "region IN ()", "(region = 'a'",
		"region = 'a')", "region = 'a' AND", "region == 'a'", "region ! 'a'", "AND = 1", "region = other", "region IS 1",
		"region = 1 2", "region = ;", "\"\" = 1", strings.Repeat("(", 40) + "a = 1" + strings.Repeat(")", 40),
		strings.Repeat("a = 1 OR ", 600) + "a = 1", "a = 1" + strings.Repeat(" ", sharing.MaxPartitionFilterLength), "a = '\xff'"} {
		if _, err := sharing.ParsePartitionFilter(bad); floe.KindOf(err) != floe.Invalid || floe.EntityOf(err) != "partition filter" {
			t.Errorf("ParsePartitionFilter(%.40q) = %v, want Invalid", bad, err)
		}
	}
}

// FuzzPartitionFilter: any input parses or is Invalid, never panics, and
// what parses renders to a canonical form that parses to itself.
func FuzzPartitionFilter(f *testing.F) {
	for _, s := range []string{"region = 'EMEA'", "a IN (1, 2) AND NOT b IS NULL", `"x y" <> 'q''q' OR (c >= -1.5)`, "((a=1))", "a = TRUE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := sharing.ParsePartitionFilter(s)
		if err != nil {
			if floe.KindOf(err) != floe.Invalid {
				t.Fatalf("error kind %v: %v", floe.KindOf(err), err)
			}
			return
		}
		canon := p.String()
		q, err := sharing.ParsePartitionFilter(canon)
		if err != nil {
			if len(canon) > sharing.MaxPartitionFilterLength {
				return // parentheses added by the canonical form
			}
			t.Fatalf("canonical %q does not parse: %v", canon, err)
		}
		if q.String() != canon {
			t.Fatalf("canonical %q reparses as %q", canon, q.String())
		}
		p.Eval(map[string]*string{"a": str("1")})
	})
}
