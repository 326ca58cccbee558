package engine

import "testing"

func TestParseSavepoint(t *testing.T) {
	for _, c := range []struct {
		sql  string
		ok   bool
		kind savepointKind
		name string
	}{
		{"SAVEPOINT _pg3_1", true, spSet, "_pg3_1"},
		{"savepoint \"A b\";", false, 0, ""},
		{"SAVEPOINT \"Ab\"", true, spSet, "Ab"},
		{"/* x */ SAVEPOINT Ab", true, spSet, "ab"},
		{"RELEASE SAVEPOINT s1", true, spRelease, "s1"},
		{"RELEASE s1", true, spRelease, "s1"},
		{"ROLLBACK TO SAVEPOINT s1", true, spRollbackTo, "s1"},
		{"ROLLBACK WORK TO s1", true, spRollbackTo, "s1"},
		{"ROLLBACK", false, 0, ""},
		{"ROLLBACK TO", false, 0, ""},
		{"SAVEPOINT", false, 0, ""},
		{"SAVEPOINT a b", false, 0, ""},
		{"SAVEPOINT a'b", false, 0, ""},
		{"SELECT 1", false, 0, ""},
	} {
		got, ok := parseSavepoint(c.sql)
		if ok != c.ok || ok && (got.kind != c.kind || got.name != c.name) {
			t.Errorf("parseSavepoint(%q) = %+v, %v; want %v %v %q", c.sql, got, ok, c.ok, c.kind, c.name)
		}
	}
}

func FuzzParseSavepoint(f *testing.F) {
	for _, s := range []string{"SAVEPOINT a", "RELEASE SAVEPOINT \"x\"", "ROLLBACK TO a", "-- c\nrelease b;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		sp, ok := parseSavepoint(sql)
		if ok && (sp.name == "" || sp.kind < spSet || sp.kind > spRollbackTo) {
			t.Fatalf("parseSavepoint(%q) = %+v", sql, sp)
		}
	})
}
