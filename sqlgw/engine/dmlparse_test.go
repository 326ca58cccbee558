package engine

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

func TestParseDML(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want dmlParsed
	}{
		{"INSERT INTO crm.people VALUES (1, 'a'), (2, 'b');",
			dmlParsed{kind: dmlInsert, target: "crm.people", rows: [][]string{{"1", "'a'"}, {"2", "'b'"}}}},
		{`insert into floe."crm".people (id, "Name") select id, name from crm.src where x = ';'`,
			dmlParsed{kind: dmlInsert, target: `floe."crm".people`, cols: []string{"id", "Name"}, source: "select id, name from crm.src where x = ';'"}},
		{"INSERT INTO t (SELECT 1)", dmlParsed{kind: dmlInsert, target: "t", source: "(SELECT 1)"}},
		{"DELETE FROM crm.people", dmlParsed{kind: dmlDelete, target: "crm.people"}},
		{"DELETE FROM crm.people p WHERE p.id = $1 -- done",
			dmlParsed{kind: dmlDelete, target: "crm.people", alias: "p", cond: "p.id = $1"}},
		{"DELETE FROM crm.people AS p USING crm.req r WHERE r.id = p.id AND r.x IS DISTINCT FROM 'WHERE'",
			dmlParsed{kind: dmlDelete, target: "crm.people", alias: "p", from: "crm.req r", cond: "r.id = p.id AND r.x IS DISTINCT FROM 'WHERE'"}},
		{"UPDATE crm.people SET salary = salary * 2, name = CASE WHEN a THEN 'x' ELSE 'y' END WHERE id IN (SELECT id FROM s WHERE q)",
			dmlParsed{kind: dmlUpdate, target: "crm.people", sets: []assignment{{"salary", "salary * 2"}, {"name", "CASE WHEN a THEN 'x' ELSE 'y' END"}}, cond: "id IN (SELECT id FROM s WHERE q)"}},
		{"UPDATE t x SET a = b IS NOT DISTINCT FROM c FROM u WHERE u.k = x.k",
			dmlParsed{kind: dmlUpdate, target: "t", alias: "x", sets: []assignment{{"a", "b IS NOT DISTINCT FROM c"}}, from: "u", cond: "u.k = x.k"}},
		{`UPDATE t SET "Mixed" = $$it's$$`,
			dmlParsed{kind: dmlUpdate, target: "t", sets: []assignment{{"Mixed", "$$it's$$"}}}},
		{"MERGE INTO crm.people t USING (SELECT * FROM crm.upd) AS s ON t.id = s.id " +
			"WHEN MATCHED AND s.del THEN DELETE WHEN MATCHED THEN UPDATE SET name = s.name, salary = CASE WHEN s.x THEN 1 END " +
			"WHEN NOT MATCHED BY TARGET THEN INSERT (id, name) VALUES (s.id, coalesce(s.name, 'x')) WHEN NOT MATCHED BY SOURCE THEN DO NOTHING",
			dmlParsed{kind: dmlMerge, target: "crm.people", alias: "t", source: "(SELECT * FROM crm.upd)", sourceAlias: "s", cond: "t.id = s.id",
				clauses: []mergeClause{
					{match: whenMatched, cond: "s.del", action: actDelete},
					{match: whenMatched, action: actUpdate, sets: []assignment{{"name", "s.name"}, {"salary", "CASE WHEN s.x THEN 1 END"}}},
					{match: whenNotMatched, action: actInsert, cols: []string{"id", "name"}, values: []string{"s.id", "coalesce(s.name, 'x')"}},
					{match: whenNotMatchedBySrc, action: actNothing},
				}}},
		{"MERGE INTO t USING crm.u ON t.id = u.id WHEN NOT MATCHED THEN INSERT VALUES (u.id, (1))",
			dmlParsed{kind: dmlMerge, target: "t", source: "crm.u", cond: "t.id = u.id",
				clauses: []mergeClause{{match: whenNotMatched, action: actInsert, values: []string{"u.id", "(1)"}}}}},
	} {
		got, err := parseDML(tc.sql)
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.sql, *got, tc.want)
		}
	}
}

func TestParseDMLRefused(t *testing.T) {
	for _, tc := range []struct {
		sql, code, msg string
	}{
		{"DELETE FROM t WHERE a = 1) OR (true", pgwire.CodeSyntaxError, "unbalanced"},
		{"DELETE FROM t WHERE (a = 1", pgwire.CodeSyntaxError, "unbalanced"},
		{"DELETE FROM t WHERE a = 1; DROP TABLE x", pgwire.CodeSyntaxError, "one statement"},
		{"DELETE FROM t WHERE a = 'x", pgwire.CodeSyntaxError, "unterminated"},
		{"DELETE FROM t RETURNING *", pgwire.CodeFeatureNotSupported, "RETURNING"},
		{"DELETE FROM t AT (VERSION => 1) WHERE true", pgwire.CodeFeatureNotSupported, "AT a snapshot"},
		{"DELETE t WHERE true", pgwire.CodeSyntaxError, "expected FROM"},
		{"INSERT OR REPLACE INTO t VALUES (1)", pgwire.CodeFeatureNotSupported, "no keys"},
		{"INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING", pgwire.CodeFeatureNotSupported, "ON CONFLICT"},
		{"INSERT INTO t DEFAULT VALUES", pgwire.CodeFeatureNotSupported, "DEFAULT VALUES"},
		{"INSERT INTO t BY NAME SELECT 1", pgwire.CodeFeatureNotSupported, "BY NAME"},
		{"UPDATE t SET (a, b) = (1, 2)", pgwire.CodeFeatureNotSupported, "assign each column"},
		{"UPDATE t SET a = 1, a = 2", pgwire.CodeSyntaxError, "multiple assignments"},
		{"UPDATE t SET a = DEFAULT", pgwire.CodeFeatureNotSupported, "DEFAULT"},
		{"UPDATE t SET a = 1 WHERE CURRENT OF c", pgwire.CodeFeatureNotSupported, "CURRENT OF"},
		{"MERGE INTO t USING s ON t.a = s.a", pgwire.CodeSyntaxError, "expected WHEN"},
		{"MERGE INTO t USING s ON t.a = s.a WHEN NOT MATCHED THEN DELETE", pgwire.CodeSyntaxError, "cannot DELETE"},
		{"MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN INSERT VALUES (1)", pgwire.CodeSyntaxError, "can INSERT"},
		{"MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN ERROR", pgwire.CodeFeatureNotSupported, "not supported"},
		{"MERGE INTO t USING s ON t.a = s.a WHEN NOT MATCHED THEN INSERT (a, b) VALUES (1)", pgwire.CodeSyntaxError, "2 columns but 1 values"},
	} {
		_, err := parseDML(tc.sql)
		var pe *pgwire.Error
		if !errors.As(err, &pe) || pe.Code != tc.code || !strings.Contains(pe.Message, tc.msg) {
			t.Errorf("%s: got %v, want %s ...%s...", tc.sql, err, tc.code, tc.msg)
		}
	}
}

// FuzzParseDML: parseDML takes client input; it must not panic, must
// report errors as *pgwire.Error, and every part it returns must be
// balanced text of the statement, so that it cannot close the SELECT the
// engine puts it in.
func FuzzParseDML(f *testing.F) {
	for _, s := range []string{
		"DELETE FROM a.b x USING c WHERE x.id = c.id",
		"UPDATE t SET a = (SELECT 1), b = 'x''y' FROM u WHERE u.a IS DISTINCT FROM t.a",
		"INSERT INTO t (a, b) VALUES ($1, E'\\'')",
		"MERGE INTO t USING (SELECT 1 AS a) s ON t.a = s.a WHEN MATCHED AND s.a > 0 THEN UPDATE SET a = 2 WHEN NOT MATCHED THEN INSERT VALUES (s.a)",
		"DELETE FROM t WHERE a = $tag$ ) $tag$ /* ( /* nested */ */",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		d, err := parseDML(sql)
		if err != nil {
			var pe *pgwire.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *pgwire.Error", err, err)
			}
			return
		}
		parts := []string{d.target, d.source, d.from, d.cond}
		for _, a := range d.sets {
			parts = append(parts, a.expr)
		}
		for _, c := range d.clauses {
			parts = append(parts, c.cond)
			parts = append(parts, c.values...)
			for _, a := range c.sets {
				parts = append(parts, a.expr)
			}
		}
		for _, p := range parts {
			if p == "" {
				continue
			}
			if !strings.Contains(sql, p) {
				t.Fatalf("part %q is not text of the statement", p)
			}
			toks, err := lexSQL(p)
			if err != nil {
				t.Fatalf("part %q does not lex: %v", p, err)
			}
			depth := 0
			for _, tk := range toks {
				switch {
				case tk.kind == tokPunct && strings.ContainsAny(tk.text, "([{"):
					depth++
				case tk.kind == tokPunct && strings.ContainsAny(tk.text, ")]}"):
					depth--
				}
				if depth < 0 || tk.text == ";" {
					t.Fatalf("part %q is not balanced", p)
				}
			}
			if depth != 0 {
				t.Fatalf("part %q is not balanced", p)
			}
		}
	})
}
