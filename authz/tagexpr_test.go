package authz

import (
	"strings"
	"testing"

	"github.com/floe-lake/floe"
)

func TestParseExpr(t *testing.T) {
	tests := []struct {
		in, want string // want: canonical form, or "error: message"
	}{
		{"domain=sales", "domain = sales"},
		{"domain = sales AND sensitivity = low", "domain = sales AND sensitivity = low"},
		{"a=1 and b=2 or c=3", "a = 1 AND b = 2 OR c = 3"},
		{"a=1 AND (b=2 OR c=3)", "a = 1 AND (b = 2 OR c = 3)"},
		{"((a=1))", "a = 1"},
		{"(a=1 OR b=2) OR c=3", "a = 1 OR b = 2 OR c = 3"},
		{"a=1 AND (b=2 AND c=3)", "a = 1 AND b = 2 AND c = 3"},
		{"k IN (a, b,c)", "k IN (a, b, c)"},
		{"k in (a, a)", "k IN (a)"},
		{"k NOT IN ('x y', \"it's\")", "k NOT IN ('x y', 'it''s')"},
		{"k != v", "k != v"},
		{"k <> v", "k != v"},
		{"k = 'and'", "k = 'and'"},
		{"k = 'a''b'", "k = 'a''b'"},
		{"team:owner = data-eng@corp.com", "team:owner = data-eng@corp.com"},
		{"k = 'é'", "k = 'é'"},
		{"", "error: tag expression is empty"},
		{"   ", "error: tag expression is empty"},
		{"a", "error: tag expression: expected =, !=, IN or NOT IN after tag key \"a\" but found end of expression at offset 2"},
		{"a = ", "error: tag expression: expected a tag value but found end of expression at offset 5"},
		{"a = b AND", "error: tag expression: expected a tag key but found end of expression at offset 10"},
		{"a = b c = d", "error: tag expression: unexpected word \"c\" at offset 7"},
		{"(a = b", "error: tag expression: expected ')' but found end of expression at offset 7"},
		{"a = b)", "error: tag expression: unexpected \")\" at offset 6"},
		{"a ! b", "error: tag expression: '!' must be followed by '=' at offset 3"},
		{"a = 'b", "error: tag expression: unterminated string at offset 5"},
		{"a = b; drop", "error: tag expression: unexpected character ';' at offset 6"},
		{"a IN ()", "error: tag expression: expected a tag value but found \")\" at offset 7"},
		{"a IN (b c)", "error: tag expression: expected ',' or ')' in IN list but found word \"c\" at offset 9"},
		{"a IN b", "error: tag expression: expected '(' after IN but found word \"b\" at offset 6"},
		{"a NOT b", "error: tag expression: expected IN after NOT but found word \"b\" at offset 7"},
		{"AND = b", "error: tag expression: expected a tag key but found word \"AND\" at offset 1"},
		{"a = OR", "error: tag expression: expected a tag value but found word \"OR\" at offset 5"},
		{"a = ''", "error: tag expression: tag value must not be empty at offset 5"},
		{"'a' = b", "error: tag expression: expected a tag key but found string 'a' at offset 1"},
		{strings.Repeat("(", 40) + "a=b" + strings.Repeat(")", 40), "error: tag expression: parentheses nested deeper than 32 at offset 34"},
		{strings.Repeat("a=b OR ", 300) + "a=b", "error: tag expression: more than 256 conditions at offset 1793"},
		{strings.Repeat("x", MaxExprLength+1), "error: tag expression is longer than 4096 bytes"},
		{"a = \xff", "error: tag expression is not valid UTF-8"},
		{"k" + strings.Repeat("x", MaxTagKeyLength) + " = v", "error: tag expression: tag key is longer than 128 bytes at offset 1"},
	}
	for _, tt := range tests {
		e, err := ParseExpr(tt.in)
		if msg, isErr := strings.CutPrefix(tt.want, "error: "); isErr {
			if err == nil || floe.KindOf(err) != floe.Invalid || floe.EntityOf(err) != "tag expression" || floe.PublicMessage(err) != msg {
				t.Errorf("ParseExpr(%q) = %v, want Invalid %q", tt.in, err, msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", tt.in, err)
			continue
		}
		if e.String() != tt.want {
			t.Errorf("ParseExpr(%q) = %q, want %q", tt.in, e.String(), tt.want)
		}
	}
}

func TestExprMatch(t *testing.T) {
	tags := map[string]string{"domain": "sales", "sensitivity": "low", "region": "eu west"}
	tests := []struct {
		expr string
		want bool
	}{
		{"domain = sales", true},
		{"domain = Sales", false},
		{"domain = sales AND sensitivity = low", true},
		{"domain = sales AND sensitivity = high", false},
		{"domain = hr OR sensitivity = low", true},
		{"sensitivity IN (low, medium)", true},
		{"sensitivity NOT IN (low, medium)", false},
		{"sensitivity NOT IN (high)", true},
		{"sensitivity != high", true},
		{"owner != finance", false}, // absent keys never match
		{"owner NOT IN (finance)", false},
		{"region = 'eu west'", true},
		{"(domain = hr OR domain = sales) AND (sensitivity = low OR x = y)", true},
	}
	for _, tt := range tests {
		e, err := ParseExpr(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Match(tags); got != tt.want {
			t.Errorf("%q.Match = %v, want %v", tt.expr, got, tt.want)
		}
	}
	e, _ := ParseExpr("b = 1 OR a IN (x) AND b != 2")
	if got := strings.Join(e.Keys(), ","); got != "a,b" {
		t.Errorf("Keys = %s", got)
	}
}

func FuzzParseExpr(f *testing.F) {
	for _, s := range []string{"domain=sales AND sensitivity=low", "a IN (b, 'c d') OR (e != f)", "k NOT IN (\"x\")",
		"((a=1))", "a = 'it''s'", "a <> b", "a ! b", "'x", ""} {
		f.Add(s)
	}
	tags := map[string]string{"a": "1", "b": "c d", "domain": "sales", "k": "x"}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseExpr(s)
		if err != nil {
			if floe.KindOf(err) != floe.Invalid {
				t.Fatalf("ParseExpr(%q) error of kind %v: %v", s, floe.KindOf(err), err)
			}
			return
		}
		// The canonical form parses to itself and means the same.
		e2, err := ParseExpr(e.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", e.String(), s, err)
		}
		if e2.String() != e.String() {
			t.Fatalf("canonical form not stable: %q -> %q", e.String(), e2.String())
		}
		if e.Match(tags) != e2.Match(tags) {
			t.Fatalf("canonical form %q matches differently from %q", e.String(), s)
		}
	})
}
