package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/ingest"
)

// runCLI runs floe with args and returns stdout, stderr and the error.
func runCLI(t *testing.T, stdin string, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := Root(&out, &errb, func(k string) string { return env[k] })
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	err := root.ExecuteContext(t.Context())
	return out.String(), errb.String(), err
}

// TestIngestCommands: floe ingest loads a file and standard input through
// a running server (create, append, overwrite, progress), reports server
// errors, and floe table add-files and register-delta reach their
// endpoints.
func TestIngestCommands(t *testing.T) {
	f := testkit.Start(t)
	env := map[string]string{"FLOE_URL": f.URL, "FLOE_CREDENTIAL": f.Cred.String()}
	if r := f.Do(t, "POST", f.P("/namespaces"), map[string]any{"namespace": []string{"cli"}}); r.Status != 200 {
		t.Fatalf("namespace: %d %s", r.Status, r.Body)
	}
	dir := t.TempDir()
	csv := filepath.Join(dir, "people.csv")
	if err := os.WriteFile(csv, []byte("id,name,ts\n1,a,2026-01-01T00:00:00Z\n2,b,2026-01-02T00:00:00Z\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runCLI(t, "", env, "ingest", "--partition", "day(ts)", "--target-file-size", "64MiB", "--progress", "cli.people", csv)
	if err != nil {
		t.Fatalf("ingest: %v (%s)", err, errOut)
	}
	if !strings.HasPrefix(out, "create cli.people: 2 rows (csv") || !strings.Contains(out, "2 data files") {
		t.Errorf("output %q", out)
	}
	if !strings.Contains(errOut, "rows/s") || !strings.Contains(errOut, "100%") {
		t.Errorf("progress %q", errOut)
	}
	// Standard input, JSON output, append.
	out, _, err = runCLI(t, `{"id":3,"name":"c","ts":"2026-01-03T00:00:00Z"}`+"\n", env, "ingest", "--format", "ndjson", "--json", "--quiet", "cli.people", "-")
	if err != nil {
		t.Fatal(err)
	}
	var res ingest.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Mode != ingest.Append || res.Rows != 1 {
		t.Fatalf("append: %q %v", out, err)
	}
	tbl := loadTable(t, f, "people")
	if tbl.Properties()["write.target-file-size-bytes"] != "67108864" {
		t.Errorf("properties %v", tbl.Properties())
	}
	// Overwrite; a server error is reported with its message.
	if _, _, err := runCLI(t, "id,name\n9,z\n", env, "ingest", "--mode", "overwrite", "--format", "csv", "cli.people", "-"); err != nil {
		t.Fatal(err)
	}
	at, err := loadTable(t, f, "people").Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if at.NumRows() != 1 {
		t.Errorf("%d rows after overwrite", at.NumRows())
	}
	at.Release()
	_, _, err = runCLI(t, "id,zip\n1,2\n", env, "ingest", "--format", "csv", "cli.people", "-")
	if err == nil || !strings.Contains(err.Error(), "the input has columns the table does not: zip") || !strings.Contains(err.Error(), "400") {
		t.Errorf("bad input: %v", err)
	}
	if _, _, err := runCLI(t, "", map[string]string{"FLOE_URL": f.URL}, "ingest", "cli.x", csv); err == nil || !strings.Contains(err.Error(), "--credential") {
		t.Errorf("no credential: %v", err)
	}
	if _, _, err := runCLI(t, "", env, "ingest", "--target-file-size", "lots", "cli.x", csv); err == nil {
		t.Error("a bad size was accepted")
	}
	// add-files and register-delta reach the server (their behaviour is tested in lake/ingest).
	_, _, err = runCLI(t, "", env, "table", "add-files", "cli.people", "s3://elsewhere/x.parquet")
	if err == nil || !strings.Contains(err.Error(), "outside the warehouse storage") {
		t.Errorf("add-files: %v", err)
	}
	_, _, err = runCLI(t, "", env, "table", "register-delta", "cli.d", "s3://"+f.Warehouse+"/nothing")
	if err == nil || !strings.Contains(err.Error(), "no Delta log") {
		t.Errorf("register-delta: %v", err)
	}
}

func loadTable(t *testing.T, f *testkit.Floe, name string) *table.Table {
	t.Helper()
	lk := lake.New(f.App.Catalog(), lake.NewBucketFS(f.App.Objects()), lake.Options{})
	tbl, err := lk.LoadTable(t.Context(), f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"cli"}, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
