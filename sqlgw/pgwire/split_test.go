package pgwire

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  ;;  ; ", nil},
		{"-- only a comment", nil},
		{"/* a */ ; /* b /* nested; */ still */", nil},
		{"select 1", []string{"select 1"}},
		{"select 1;select 2;", []string{"select 1", "select 2"}},
		{" select 1 ; -- trailing; comment\n", []string{"select 1"}},
		{"select ';' ; select 'it''s;'", []string{"select ';'", "select 'it''s;'"}},
		{`select E'\';' ; select 2`, []string{`select E'\';'`, "select 2"}},
		{`select '\'; select 2`, []string{`select '\'`, "select 2"}},       // no backslash escapes in standard strings
		{`select e'a\\'; select 2`, []string{`select e'a\\'`, "select 2"}}, // lower-case e
		{`select one'x;'`, []string{`select one'x;'`}},
		{`select "a;""b" from t; select 2`, []string{`select "a;""b" from t`, "select 2"}},
		{"select $$a;b$$; select $tag$ $$; $tag$", []string{"select $$a;b$$", "select $tag$ $$; $tag$"}},
		{"select $1; select $2", []string{"select $1", "select $2"}},
		{"select a$b$c; select 2", []string{"select a$b$c", "select 2"}},
		{"select 1 /* ; */ + 2; select 3", []string{"select 1 /* ; */ + 2", "select 3"}},
		{"select 'unterminated; select 2", []string{"select 'unterminated; select 2"}},
		{"select /* unterminated; select 2", []string{"select /* unterminated; select 2"}},
		{"select $x$ unterminated; select 2", []string{"select $x$ unterminated; select 2"}},
		{"select 1 -- no newline; select 2", []string{"select 1 -- no newline; select 2"}},
		{"select 'ü;'; select 2", []string{"select 'ü;'", "select 2"}},
	}
	for _, tc := range cases {
		if got := SplitStatements(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("SplitStatements(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzSplitStatements checks that splitting never panics, returns trimmed
// non-empty statements taken from the input in order, and that statements
// without quoting characters split exactly at semicolons.
func FuzzSplitStatements(f *testing.F) {
	for _, s := range []string{"select 1; select 2", "select 'a;b'; select $$;$$", `E'\'';`, "/* /* */ */;", "--;\n;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		stmts := SplitStatements(s)
		pos := 0
		for _, st := range stmts {
			if st == "" || st != strings.Trim(st, asciiSpace) {
				t.Fatalf("statement %q is empty or untrimmed", st)
			}
			i := strings.Index(s[pos:], st)
			if i < 0 {
				t.Fatalf("statement %q not found in order in %q", st, s)
			}
			pos += i + len(st)
		}
		if !strings.ContainsAny(s, "'\"$-/") {
			var want []string
			for _, part := range strings.Split(s, ";") {
				if p := strings.Trim(part, asciiSpace); p != "" {
					want = append(want, p)
				}
			}
			if !slices.Equal(stmts, want) {
				t.Fatalf("SplitStatements(%q) = %q, want %q", s, stmts, want)
			}
		}
	})
}
