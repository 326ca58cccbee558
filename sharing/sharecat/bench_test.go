package sharecat_test

import (
	"io"
	"net/http"
	"testing"
)

// BenchmarkLoadTable compares, in one run on one server, a recipient's
// loadTable through the share catalog with a principal's loadTable of the
// same table in the main catalog, over HTTP with vended credentials (the
// issue's target: share ≥ 0.8× main). The sub-benchmarks alternate with
// -count.
func BenchmarkLoadTable(b *testing.B) {
	f, _, _ := sharedFloe(b)
	admin := f.Token(b)
	client := &http.Client{}
	get := func(b *testing.B, token, path string) {
		req, _ := http.NewRequest("GET", f.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
	cases := []struct{ name, token, path string }{
		{"main", admin, "/v1/" + f.Warehouse + "/namespaces/hr/tables/salaries"},
		{"share", "alice-token", "/shares/sales/iceberg/v1/sales/namespaces/emea/tables/pay"},
		{"share-history-off", "alice-token", "/shares/sales/iceberg/v1/sales/namespaces/emea/tables/orders"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			get(b, c.token, c.path)
			b.ReportAllocs()
			for b.Loop() {
				get(b, c.token, c.path)
			}
		})
	}
}
