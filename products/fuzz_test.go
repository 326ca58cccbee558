package products

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzProduct: any JSON a caller sends as a product definition is refused
// with an error or validates; a valid one yields expectation queries and
// metric queries without panicking, and a dimension a caller names never
// reaches the SQL unless the definition allows it.
func FuzzProduct(f *testing.F) {
	seed, _ := json.Marshal(pipeline())
	f.Add(seed, "region")
	f.Add([]byte(`{"name":"x","warehouse":"w","owner":"o","outputs":[{"namespace":["a"],"table":"t"}],"expectations":[{"kind":"row_count","port":"t","min":1,"max":0}]}`), `"; DROP`)
	f.Add([]byte(`{"name":"x","check_every":"7d"}`), "")
	f.Fuzz(func(t *testing.T, data []byte, dim string) {
		var p Product
		if json.Unmarshal(data, &p) != nil {
			return
		}
		if p.Validate() != nil {
			return
		}
		for _, e := range p.Expectations {
			if _, err := p.Query(e); err != nil {
				t.Fatalf("valid expectation %q has no query: %v", e.Name, err)
			}
		}
		for _, m := range p.Metrics {
			q, err := p.MetricSQL(MetricRequest{Metric: m.Name, Dimensions: []string{dim}})
			if err == nil && !strings.Contains(q, QuoteIdent(dim)) {
				t.Fatalf("dimension %q accepted but not quoted in %s", dim, q)
			}
		}
	})
}
