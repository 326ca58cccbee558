package restcat_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/testkit"
)

type namespaceBody struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

func loadNamespace(t *testing.T, f *testkit.Floe, ns string) namespaceBody {
	t.Helper()
	r := f.Do(t, "GET", f.P("/namespaces/"+ns), nil)
	mustStatus(t, r, 200)
	var b namespaceBody
	r.JSON(t, &b)
	return b
}

// parent is path.Dir for a location URI (path.Dir would fold "s3://" to "s3:/").
func parent(loc string) string { return loc[:strings.LastIndexByte(loc, '/')] }

// filesUnder lists the objects the embedded store holds under loc.
func filesUnder(t *testing.T, f *testkit.Floe, loc string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(f.LocalPath(loc), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == f.LocalPath(loc) && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNamespaceDefaultLocation: a namespace created without a location
// property answers one, on create and on load: the directory in which Floe
// places the namespace's tables. Nested namespaces nest; a location the
// client set is kept. Engines that place tables themselves (Trino) need it.
func TestNamespaceDefaultLocation(t *testing.T) {
	f := testkit.Start(t)
	r := f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["crm"]}`)
	mustStatus(t, r, 200)
	var created namespaceBody
	r.JSON(t, &created)
	tbl := f.CreateTable(t, "crm", "accounts")
	want := parent(tbl.Metadata.Location) // where Floe put the namespace's table
	if created.Properties["location"] != want {
		t.Errorf("create answered location %q, want %q (properties %v)", created.Properties["location"], want, created.Properties)
	}
	if got := loadNamespace(t, f, "crm").Properties["location"]; got != want {
		t.Errorf("load answered location %q, want %q", got, want)
	}

	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["crm","emea"],"properties":{"owner":"ana"}}`), 200)
	nested := loadNamespace(t, f, "crm%1Femea")
	if nested.Properties["location"] != want+"/emea" || nested.Properties["owner"] != "ana" {
		t.Errorf("nested namespace properties %v, want location %q and owner", nested.Properties, want+"/emea")
	}
	inner := f.CreateTable(t, "crm%1Femea", "leads")
	if parent(inner.Metadata.Location) != want+"/emea" {
		t.Errorf("table of crm.emea at %s, namespace location %s/emea", inner.Metadata.Location, want)
	}

	explicit := "s3://" + f.Warehouse + "/custom/place"
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), map[string]any{"namespace": []string{"ext"}, "properties": map[string]string{"location": explicit}}), 200)
	if got := loadNamespace(t, f, "ext").Properties["location"]; got != explicit {
		t.Errorf("explicit location became %q, want %q", got, explicit)
	}

	// Removing the property gives the default back, never no location.
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/ext/properties"), `{"removals":["location"]}`), 200)
	if got := loadNamespace(t, f, "ext").Properties["location"]; got != parent(want)+"/ext" {
		t.Errorf("location after removal %q, want %q", got, parent(want)+"/ext")
	}
}

// TestTrinoCreateLeavesNothingOnFailure replays what Trino 476's REST
// catalog does for CREATE TABLE and CTAS: it reads the namespace's location;
// with one, it places the table at <location>/<name>-<random>, stages the
// create, refuses a location that already has files, writes its data and
// commits with assert-create. Without one it creates the table outright,
// finds the metadata Floe just wrote under the location, fails, and leaves
// the table behind. A staged create leaves neither a table nor a file until
// it commits; a commit that fails leaves none either.
func TestTrinoCreateLeavesNothingOnFailure(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["crm"]}`), 200)
	nsLoc := loadNamespace(t, f, "crm").Properties["location"]
	if nsLoc == "" {
		t.Fatal("namespace crm has no location: Trino would create the table unstaged and fail on its own metadata")
	}
	stage := func(name string) (string, testkit.Response) {
		b := make([]byte, 16)
		rand.Read(b)
		loc := nsLoc + "/" + name + "-" + hex.EncodeToString(b)
		r := f.Do(t, "POST", f.P("/namespaces/crm/tables"), createTableBody(name, `,"stage-create":true,"location":"`+loc+`"`))
		mustStatus(t, r, 200)
		return loc, r
	}

	loc, staged := stage("t")
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/crm/tables/t"), nil), 404)
	if files := filesUnder(t, f, loc); len(files) != 0 {
		t.Fatalf("a staged create wrote %v: Trino refuses a non-empty location", files)
	}
	// A second create of the same name, staged meanwhile, loses at commit and leaves nothing.
	loc2, staged2 := stage("t")
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/crm/tables/t"), stagedCommit(t, staged, loc)), 200)
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/crm/tables/t"), nil), 204)
	r := f.Do(t, "POST", f.P("/namespaces/crm/tables/t"), stagedCommit(t, staged2, loc2))
	if r.Status != 409 {
		t.Fatalf("second staged create committed: status %d (%s)", r.Status, r.Body)
	}
	if files := filesUnder(t, f, loc2); len(files) != 0 {
		t.Errorf("the failed commit left %v", files)
	}
	// A staged create that is never committed (Trino's query failed) leaves nothing.
	loc3, _ := stage("abandoned")
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/crm/tables/abandoned"), nil), 404)
	if files := filesUnder(t, f, loc3); len(files) != 0 {
		t.Errorf("an abandoned staged create left %v", files)
	}
}
