package restcat_test

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/spectest"
	"github.com/floe-lake/floe/internal/testkit"
)

// functionJSON is valid FunctionMetadata with one definition (int) whose
// current version's Spark body is sql.
func functionJSON(fnUUID, sql string) string {
	return fmt.Sprintf(`{"function-uuid":%q,"format-version":1,
 "definitions":[{"definition-id":"int","parameters":[{"name":"x","type":"int"}],"return-type":"int","function-type":"udf",
  "versions":[{"version-id":1,"representations":[{"type":"sql","dialect":"spark","sql":%q}],"timestamp-ms":1734507000123}],
  "current-version-id":1}],
 "definition-log":[{"timestamp-ms":1734507000123,"definition-versions":[{"definition-id":"int","version-id":1}]}]}`, fnUUID, sql)
}

const fnUUID = "42fd3f91-bc10-41c1-8a52-92b57dd0a9b2"

func putFunction(t *testing.T, f *testkit.Floe, ns catalog.Namespace, name, body string, req catalog.PutFunction) (*catalog.FunctionState, error) {
	t.Helper()
	req.Metadata = []byte(body)
	st, _, err := f.App.Catalog().PutFunction(context.Background(), f.Warehouse, catalog.Ident{Namespace: ns, Name: name}, req)
	return st, err
}

// functionFiles lists the files under the warehouse's functions directories.
func functionFiles(t *testing.T, f *testkit.Floe) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(f.App.Config().WarehouseDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(filepath.ToSlash(p), "/functions/") {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFunctionsListAndLoad(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["analytics"]}`), 200)
	ns := catalog.Namespace{"analytics"}
	// An empty namespace lists no functions.
	var list struct {
		Next        *string    `json:"next-page-token"`
		Identifiers [][]string `json:"identifiers"`
	}
	r := f.Do(t, "GET", f.P("/namespaces/analytics/functions"), nil)
	mustStatus(t, r, 200)
	r.JSON(t, &list)
	if len(list.Identifiers) != 0 {
		t.Fatalf("empty namespace lists %v", list.Identifiers)
	}
	names := []string{"add_one", "b", "c", "d", "e"}
	for i, n := range names {
		u := fmt.Sprintf("42fd3f91-bc10-41c1-8a52-92b57dd0a9b%d", i)
		if _, err := putFunction(t, f, ns, n, functionJSON(u, "x + 1"), catalog.PutFunction{Create: true}); err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
	}
	// A function may share its name with a table: its own identifier space.
	f.CreateTable(t, "analytics", "add_one")
	// Paging: two at a time, in name order, with a token until the end.
	var got []string
	path := f.P("/namespaces/analytics/functions?pageSize=2")
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		list.Next = nil
		r := f.Do(t, "GET", path, nil)
		mustStatus(t, r, 200)
		r.JSON(t, &list)
		for _, id := range list.Identifiers {
			if len(id) != 2 || id[0] != "analytics" {
				t.Fatalf("identifier %v", id)
			}
			got = append(got, id[1])
		}
		if list.Next == nil {
			break
		}
		path = f.P("/namespaces/analytics/functions?pageSize=2&pageToken=" + *list.Next)
	}
	if !slices.Equal(got, names) {
		t.Errorf("paged list %v, want %v", got, names)
	}
	// Load: LoadFunctionResult with the stored metadata and its location.
	var res struct {
		Location string `json:"metadata-location"`
		Metadata struct {
			UUID     string `json:"function-uuid"`
			Location string `json:"location"`
			Defs     []struct {
				Versions []struct {
					Reps []struct {
						SQL string `json:"sql"`
					} `json:"representations"`
				} `json:"versions"`
			} `json:"definitions"`
		} `json:"metadata"`
	}
	r = f.Do(t, "GET", f.P("/namespaces/analytics/functions/add_one"), nil)
	mustStatus(t, r, 200)
	r.JSON(t, &res)
	if res.Metadata.UUID != "42fd3f91-bc10-41c1-8a52-92b57dd0a9b0" || res.Metadata.Defs[0].Versions[0].Reps[0].SQL != "x + 1" {
		t.Errorf("loaded %s", r.Body)
	}
	wantPrefix := "s3://" + f.Warehouse + "/analytics/functions/add_one-42fd3f91bc1041c18a5292b57dd0a9b0"
	if res.Metadata.Location != wantPrefix || !strings.HasPrefix(res.Location, wantPrefix+"/metadata/00000-") || !strings.HasSuffix(res.Location, ".metadata.json") {
		t.Errorf("location %q, metadata-location %q, want under %q", res.Metadata.Location, res.Location, wantPrefix)
	}
	// Missing function or namespace: 404 with the spec's exception types.
	wantErr(t, f.Do(t, "GET", f.P("/namespaces/analytics/functions/nope"), nil), 404, "NoSuchFunctionException", "Function does not exist: analytics.nope")
	wantErr(t, f.Do(t, "GET", f.P("/namespaces/nope/functions/add_one"), nil), 404, "NoSuchFunctionException", "")
	wantErr(t, f.Do(t, "GET", f.P("/namespaces/nope/functions"), nil), 404, "NoSuchNamespaceException", "nope")
	wantErr(t, f.Do(t, "GET", f.P("/namespaces/analytics/functions?pageToken=%21%21"), nil), 400, "BadRequestException", "")
	// A namespace holding functions is not empty.
	f.Do(t, "DELETE", f.P("/namespaces/analytics/tables/add_one"), nil)
	wantErr(t, f.Do(t, "DELETE", f.P("/namespaces/analytics"), nil), 409, "NamespaceNotEmptyException", "")
	for _, n := range names {
		if err := f.App.Catalog().DropFunction(context.Background(), f.Warehouse, catalog.Ident{Namespace: ns, Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	mustStatus(t, f.Do(t, "DELETE", f.P("/namespaces/analytics"), nil), 204)
}

func TestFunctionsInvalidMetadataWritesNothing(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["analytics"]}`), 200)
	ns := catalog.Namespace{"analytics"}
	bad := []struct{ name, body string }{
		{"wrong definition-id", strings.Replace(functionJSON(fnUUID, "x"), `"definition-id":"int"`, `"definition-id":"long"`, 1)},
		{"format version 2", strings.Replace(functionJSON(fnUUID, "x"), `"format-version":1`, `"format-version":2`, 1)},
		{"current version missing", strings.Replace(functionJSON(fnUUID, "x"), `"current-version-id":1`, `"current-version-id":9`, 1)},
		{"not JSON", `{"function-uuid":`},
		{"foreign location", strings.Replace(functionJSON(fnUUID, "x"), `"format-version":1`, `"format-version":1,"location":"s3://elsewhere/f"`, 1)},
	}
	for _, c := range bad {
		_, err := putFunction(t, f, ns, "f", c.body, catalog.PutFunction{})
		if floe.KindOf(err) != floe.Invalid {
			t.Errorf("%s: %v, want Invalid", c.name, err)
		}
	}
	if files := functionFiles(t, f); len(files) != 0 {
		t.Errorf("invalid metadata wrote %v", files)
	}
	wantErr(t, f.Do(t, "GET", f.P("/namespaces/analytics/functions/f"), nil), 404, "NoSuchFunctionException", "")
	// A replace may not change the function's uuid.
	if _, err := putFunction(t, f, ns, "f", functionJSON(fnUUID, "x"), catalog.PutFunction{Create: true}); err != nil {
		t.Fatal(err)
	}
	before := functionFiles(t, f)
	_, err := putFunction(t, f, ns, "f", functionJSON("00000000-0000-0000-0000-000000000001", "x"), catalog.PutFunction{})
	if floe.KindOf(err) != floe.Invalid || !strings.Contains(err.Error(), "function-uuid") {
		t.Errorf("uuid change: %v", err)
	}
	if after := functionFiles(t, f); len(after) != len(before) {
		t.Errorf("refused replace wrote files: %v", after)
	}
}

func TestFunctionsReplaceConcurrency(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["analytics"]}`), 200)
	ns := catalog.Namespace{"analytics"}
	st, err := putFunction(t, f, ns, "f", functionJSON(fnUUID, "x"), catalog.PutFunction{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	// Create refuses an existing function; Replace a missing one.
	if _, err := putFunction(t, f, ns, "f", functionJSON(fnUUID, "x"), catalog.PutFunction{Create: true}); floe.KindOf(err) != floe.AlreadyExists {
		t.Errorf("second create: %v", err)
	}
	if _, err := putFunction(t, f, ns, "g", functionJSON(fnUUID, "x"), catalog.PutFunction{Replace: true}); floe.KindOf(err) != floe.NotFound {
		t.Errorf("replace of a missing function: %v", err)
	}
	// Eight replaces that all read the same location: exactly one wins,
	// the others get Conflict, and the winner's body is what loads.
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = putFunction(t, f, ns, "f", functionJSON(fnUUID, fmt.Sprintf("x + %d", i)), catalog.PutFunction{IfMatch: st.Location})
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("replaces %d and %d both won", won, i)
		case err == nil:
			won = i
		case floe.KindOf(err) != floe.Conflict:
			t.Errorf("replace %d: %v, want Conflict", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no replace won")
	}
	cur, err := f.App.Catalog().LoadFunction(context.Background(), f.Warehouse, catalog.Ident{Namespace: ns, Name: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if got := cur.Metadata.Definitions[0].Versions[0].Representations[0].SQL; got != fmt.Sprintf("x + %d", won) {
		t.Errorf("current body %q, want the winner's (%d)", got, won)
	}
	if !strings.HasPrefix(cur.Location[strings.LastIndex(cur.Location, "/")+1:], "00001-") {
		t.Errorf("after one replace the metadata is %s, want version 00001", cur.Location)
	}
	// Replaces without IfMatch all land, one after another. An attempt
	// loses only to another writer's landed replace, so as many writers
	// as the catalog makes attempts (its default 4 retries and the first)
	// always land; with more, a writer may lose every attempt and get
	// Conflict, as any Iceberg commit does after its retries.
	const unconditional = 5
	errs = errs[:unconditional]
	for i := range unconditional {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = putFunction(t, f, ns, "f", functionJSON(fnUUID, fmt.Sprintf("y + %d", i)), catalog.PutFunction{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("unconditional replace %d: %v", i, err)
		}
	}
}

// TestEndpointsCoverSpec: /v1/config advertises every operation of the
// REST spec except getConfig itself and the deprecated OAuth2 token
// endpoint (served, but not a catalog operation a client looks up there).
func TestEndpointsCoverSpec(t *testing.T) {
	f := testkit.Start(t)
	var cfg struct {
		Endpoints []string `json:"endpoints"`
	}
	f.Do(t, "GET", "/v1/config", nil).JSON(t, &cfg)
	spec, err := spectest.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range spec.Operations() {
		if op == "GET /v1/config" || op == "POST /v1/oauth/tokens" {
			continue
		}
		if !slices.Contains(cfg.Endpoints, op) {
			t.Errorf("spec operation %q is not advertised", op)
		}
	}
	for _, e := range cfg.Endpoints {
		if !slices.Contains(spec.Operations(), e) {
			t.Errorf("advertised %q is not an operation of the spec", e)
		}
	}
}
