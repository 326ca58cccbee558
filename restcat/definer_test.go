package restcat_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
)

// A view version naming a definer (floe.definer, whose rights a SECURITY
// DEFINER view reads with in the SQL endpoint) may be written through the
// REST catalog by that principal only: on create, on replace and on
// register.
func TestViewDefinerOnlyByItself(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["d"]}`), 200)
	tok := principal(t, f, "mallory")
	grant(t, f, authz.Grant{Grantee: authz.Principal("mallory"), Privilege: authz.CreateView, On: authz.NamespaceOf(f.Warehouse, catalog.Namespace{"d"})})
	version := func(id int, definer string) string {
		summary := `{"engine-name":"test"}`
		if definer != "" {
			summary = fmt.Sprintf(`{"engine-name":"test","floe.definer":%q}`, definer)
		}
		return fmt.Sprintf(`{"version-id":%d,"timestamp-ms":%d,"schema-id":0,"summary":%s,"default-namespace":["d"],
		 "representations":[{"type":"sql","sql":"select %d as n","dialect":"spark"}]}`, id, time.Now().UnixMilli(), summary, id)
	}
	create := func(name, definer string) string {
		return fmt.Sprintf(`{"name":%q,"schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"n","required":false,"type":"long"}]},
		 "view-version":%s,"properties":{"floe.security":"definer"}}`, name, version(1, definer))
	}
	for _, tc := range []struct {
		name, definer string
		status        int
	}{
		{"forged", "admin", 403},
		{"forged2", "alice", 403},
		{"own", "mallory", 200},
		{"none", "", 200},
	} {
		r := f.DoAs(t, tok, "POST", f.P("/namespaces/d/views"), create(tc.name, tc.definer))
		if r.Status != tc.status {
			t.Fatalf("create %s naming %q: status %d, want %d: %s", tc.name, tc.definer, r.Status, tc.status, r.Body)
		}
	}
	var lv struct {
		MetadataLocation string `json:"metadata-location"`
		Metadata         struct {
			UUID string `json:"view-uuid"`
		} `json:"metadata"`
	}
	f.DoAs(t, tok, "GET", f.P("/namespaces/d/views/own"), nil).JSON(t, &lv)
	replace := func(definer string) string {
		return fmt.Sprintf(`{"requirements":[{"type":"assert-view-uuid","uuid":%q}],"updates":[
		 {"action":"add-view-version","view-version":%s},{"action":"set-current-view-version","view-version-id":-1}]}`, lv.Metadata.UUID, version(2, definer))
	}
	if r := f.DoAs(t, tok, "POST", f.P("/namespaces/d/views/own"), replace("alice")); r.Status != 403 {
		t.Fatalf("replace naming another definer: status %d: %s", r.Status, r.Body)
	}
	mustStatus(t, f.DoAs(t, tok, "POST", f.P("/namespaces/d/views/own"), replace("mallory")), 200)
	// The administrator writes a version naming alice; mallory may not
	// register its metadata as a view of its own.
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/d/views"), create("admins", "alice")), 200)
	var adm struct {
		MetadataLocation string `json:"metadata-location"`
	}
	f.Do(t, "GET", f.P("/namespaces/d/views/admins"), nil).JSON(t, &adm)
	if r := f.DoAs(t, tok, "POST", f.P("/namespaces/d/register-view"), map[string]string{"name": "copy", "metadata-location": adm.MetadataLocation}); r.Status != 403 {
		t.Fatalf("register of a version naming alice: status %d: %s", r.Status, r.Body)
	}
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/d/views/copy"), nil), 404)
}
