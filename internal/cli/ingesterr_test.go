package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/internal/testkit"
)

// TestIngestErrorLocations: floe ingest of a bad CSV or NDJSON file fails
// with a message naming the file, the line and row, and the column, the
// same the HTTP error JSON carries; the table keeps its snapshot.
func TestIngestErrorLocations(t *testing.T) {
	f := testkit.Start(t)
	env := map[string]string{"FLOE_URL": f.URL, "FLOE_CREDENTIAL": f.Cred.String()}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, _, err := runCLI(t, "", env, "ingest", "--quiet", "--create-namespace", "cli.orders", write("good.csv", "id,amount,day\n1,2.5,2026-01-01\n")); err != nil {
		t.Fatal(err)
	}
	before := loadTable(t, f, "orders").CurrentSnapshot().SnapshotID
	for _, c := range []struct {
		name, file, body, stdin string
		want                    string
	}{
		{"bad double", "bad.csv", "id,amount,day\n2,3.5,2026-01-02\n3,lots,2026-01-03\n", "",
			`bad.csv line 3 (row 2), column "amount": "lots" is not a valid double`},
		{"bad date", "dates.csv", "id,amount,day\n2,3.5,January 2\n", "",
			`dates.csv line 2 (row 1), column "day": "January 2" is not a valid date`},
		{"wrong number of fields", "short.csv", "id,amount,day\n2,3.5\n", "",
			"short.csv line 2 (row 1): the row has a different number of fields than the header's 3"},
		{"bad JSON", "bad.ndjson", `{"id":4,"amount":1}` + "\n" + `{"id":5,"amount":}` + "\n", "",
			"bad.ndjson line 2 (row 2): invalid JSON"},
		{"bad value on standard input", "-", "", "id,amount\n9,x\n",
			`request body line 2 (row 1), column "amount": "x" is not a valid double`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.file
			args := []string{"ingest", "--quiet", "cli.orders"}
			if c.file != "-" {
				path = write(c.file, c.body)
			} else {
				args = append(args, "--format", "csv")
			}
			_, _, err := runCLI(t, c.stdin, env, append(args, path)...)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "400") {
				t.Fatalf("error %v\nwant one containing %q", err, c.want)
			}
			if got := loadTable(t, f, "orders").CurrentSnapshot().SnapshotID; got != before {
				t.Errorf("a failed ingest committed snapshot %d", got)
			}
		})
	}
	// The HTTP error JSON carries the location too.
	body := "id,amount\n1,2\n2,zwei\n"
	r := f.Do(t, "POST", "/api/v1/tables/"+f.Warehouse+"/cli/orders/ingest?format=csv&name=raw.csv", body, "Content-Type", "application/octet-stream")
	var e httperr.Response
	r.JSON(t, &e)
	if r.Status != http.StatusBadRequest || e.Error.Message != `raw.csv line 3 (row 2), column "amount": "zwei" is not a valid double` {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}
