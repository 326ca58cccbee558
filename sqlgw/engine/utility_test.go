package engine

import (
	"strings"
	"testing"
)

func TestParseUtility(t *testing.T) {
	for _, tc := range []struct {
		sql   string
		ok    bool
		kind  utilityKind
		name  string
		value string
	}{
		{"SET extra_float_digits = 3", true, utilSet, "extra_float_digits", "3"},
		{"set application_name to 'PostgreSQL JDBC Driver'", true, utilSet, "application_name", "PostgreSQL JDBC Driver"},
		{"SET SESSION TimeZone = 'Europe/Paris';", true, utilSet, "timezone", "Europe/Paris"},
		{"SET TIME ZONE 'UTC'", true, utilSet, "timezone", "UTC"},
		{"SET search_path = crm, public", true, utilSet, "search_path", "crm, public"},
		{"SET datestyle TO DEFAULT", true, utilReset, "datestyle", ""},
		{"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED", true, utilNoop, "", ""},
		{"-- c\nSHOW server_version", true, utilShow, "server_version", ""},
		{"show time zone", true, utilShow, "timezone", ""},
		{"SHOW TRANSACTION ISOLATION LEVEL", true, utilShow, "transaction_isolation", ""},
		{"show  transaction\tisolation level;", true, utilShow, "transaction_isolation", ""},
		{"RESET ALL", true, utilReset, "all", ""},
		{"BEGIN", true, utilBegin, "", ""},
		{"start transaction read only", true, utilBegin, "", ""},
		{"COMMIT", true, utilCommit, "", ""},
		{"ROLLBACK", true, utilRollback, "", ""},
		{"  ", true, utilEmpty, "", ""},
		{"SET x = 'a'b'", false, 0, "", ""},
		{"SET threads", false, 0, "", ""},
		{"SELECT 1", false, 0, "", ""},
		{"ROLLBACK TO SAVEPOINT a", false, 0, "", ""},
		{"START 1", false, 0, "", ""},
	} {
		u, ok := parseUtility(tc.sql)
		if ok != tc.ok || u.kind != tc.kind || u.name != tc.name || u.value != tc.value {
			t.Errorf("%q: got %+v %v", tc.sql, u, ok)
		}
	}
}

// FuzzParseUtility: parseUtility takes client input; it must not panic,
// and a setting it accepts has a plain name and a value without quotes
// left open.
func FuzzParseUtility(f *testing.F) {
	for _, s := range []string{"SET a = 1", "SET TIME ZONE 'UTC'", "show all", "SET x TO 'a''b', c", "BEGIN", "/* x */ RESET a", "SET LOCAL"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		u, ok := parseUtility(sql)
		if !ok || u.kind != utilSet {
			return
		}
		if u.name == "" || strings.ContainsAny(u.name, " \t\n=") {
			t.Fatalf("%q: name %q", sql, u.name)
		}
	})
}

func TestFirstWord(t *testing.T) {
	for in, want := range map[string]string{"  /* a */ -- b\n copy x": "copy", "attach 'x'": "attach", "": "", "/* open": ""} {
		if got := firstWord(in); got != want {
			t.Errorf("%q: %q", in, got)
		}
	}
}
