package sharecat_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/sharing"
)

// TestEndToEndSharedViews: a view shared with the tables it reads is
// listed and served through the share catalog with its SQL rewritten to
// the tables' aliases (every representation, no real name left, one
// version, the share's schema as its default namespace); a view reading a
// table outside the share is listed but refused, naming nothing real; a
// view of another share is not there.
func TestEndToEndSharedViews(t *testing.T) {
	f, res, _ := sharedFloe(t)
	view := func(name string, reps ...[2]string) {
		t.Helper()
		var rs []string
		for _, r := range reps {
			rs = append(rs, fmt.Sprintf(`{"type":"sql","sql":%q,"dialect":%q}`, r[1], r[0]))
		}
		body := fmt.Sprintf(`{"name":%q,"schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"}]},
		 "view-version":{"version-id":1,"timestamp-ms":%d,"schema-id":0,"summary":{"engine-name":"test"},"default-namespace":["hr"],
		 "representations":[%s]},"properties":{}}`, name, time.Now().UnixMilli(), strings.Join(rs, ","))
		if r := f.Do(t, "POST", f.P("/namespaces/hr/views"), body); r.Status != 200 {
			t.Fatalf("create view %s: %d %s", name, r.Status, r.Body)
		}
	}
	view("big_pay", [2]string{"spark", "SELECT p.id FROM hr.payroll p JOIN salaries s ON p.id = s.id WHERE p.id > 5"},
		[2]string{"duckdb", `SELECT p.id FROM "hr"."payroll" AS p JOIN hr.salaries AS s ON p.id = s.id WHERE p.id > 5`})
	view("peek", [2]string{"spark", "SELECT id FROM hr.hidden"})
	for _, v := range []struct{ alias, real string }{{"big", "big_pay"}, {"peek", "peek"}} {
		res.AddTable(sharing.Table{ID: "oid-" + v.alias, Share: "sales", Schema: "emea", Name: v.alias, Warehouse: f.Warehouse,
			Ident: catalog.Ident{Namespace: catalog.Namespace{"hr"}, Name: v.real}, IsView: true})
	}
	base := "/shares/sales/iceberg/v1/sales/namespaces/emea/views"
	r := f.DoAs(t, "alice-token", "GET", base, nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"big"`) || !strings.Contains(string(r.Body), `"peek"`) {
		t.Fatalf("list views: %d %s", r.Status, r.Body)
	}
	r = f.DoAs(t, "alice-token", "GET", base+"/big", nil)
	if r.Status != 200 {
		t.Fatalf("load view: %d %s", r.Status, r.Body)
	}
	var lv struct {
		Metadata struct {
			Versions []struct {
				DefaultNamespace []string `json:"default-namespace"`
				Representations  []struct {
					SQL     string `json:"sql"`
					Dialect string `json:"dialect"`
				} `json:"representations"`
			} `json:"versions"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(r.Body, &lv); err != nil || len(lv.Metadata.Versions) != 1 {
		t.Fatalf("view metadata: %v %s", err, r.Body)
	}
	v := lv.Metadata.Versions[0]
	want := map[string]string{
		"spark":  "SELECT p.id FROM `emea`.`orders` p JOIN `emea`.`pay` s ON p.id = s.id WHERE p.id > 5",
		"duckdb": `SELECT p.id FROM "emea"."orders" AS p JOIN "emea"."pay" AS s ON p.id = s.id WHERE p.id > 5`,
	}
	if len(v.Representations) != 2 || len(v.DefaultNamespace) != 1 || v.DefaultNamespace[0] != "emea" {
		t.Fatalf("served version %+v", v)
	}
	for _, rep := range v.Representations {
		if rep.SQL != want[rep.Dialect] {
			t.Errorf("%s: %s, want %s", rep.Dialect, rep.SQL, want[rep.Dialect])
		}
	}
	body := string(r.Body)
	if i := strings.Index(body, `"metadata":`); strings.Contains(body[i:], "payroll") || strings.Contains(body[i:], "salaries") ||
		strings.Contains(body[i:], `"hr"`) {
		t.Fatalf("a real name in the served view: %s", body)
	}
	if r := f.DoAs(t, "alice-token", "HEAD", base+"/big", nil); r.Status != http.StatusNoContent {
		t.Fatalf("view exists: %d", r.Status)
	}
	r = f.DoAs(t, "alice-token", "GET", base+"/peek", nil)
	if r.Status != http.StatusForbidden || strings.Contains(string(r.Body), "hidden") || strings.Contains(string(r.Body), "hr.") {
		t.Fatalf("a view of an unshared table: %d %s", r.Status, r.Body)
	}
	for _, p := range []string{base + "/big_pay", base + "/orders", "/shares/sales/iceberg/v1/sales/namespaces/hr/views/big_pay"} {
		if r := f.DoAs(t, "alice-token", "GET", p, nil); r.Status != http.StatusNotFound {
			t.Fatalf("%s: %d %s", p, r.Status, r.Body)
		}
	}
}
