package engine

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// firstTableFunction returns the first TABLE_FUNCTION node of a tree.
func firstTableFunction(v any) node {
	var calls []node
	collectMetricCalls(v, &calls)
	if len(calls) > 0 {
		return calls[0]
	}
	return nil
}

func TestParseMetricCall(t *testing.T) {
	d := newTreeDB(t)
	for _, tc := range []struct {
		sql  string
		want MetricRequest
		err  string // part of the 22023 message; "" succeeds
	}{
		{"SELECT * FROM floe_metric('p', 'm')", MetricRequest{Product: "p", Metric: "m"}, ""},
		{"SELECT * FROM floe_metric('sales_pipeline', 'open_pipeline_value', grain => 'month', dimensions => ['region'])",
			MetricRequest{Product: "sales_pipeline", Metric: "open_pipeline_value", Grain: "month", Dimensions: []string{"region"}}, ""},
		{"SELECT * FROM FLOE_METRIC('p', 'm', dimensions := ['a', 'b'], warehouse => 'w')",
			MetricRequest{Warehouse: "w", Product: "p", Metric: "m", Dimensions: []string{"a", "b"}}, ""},
		{"SELECT * FROM floe.floe_metric('p', 'm', dimensions => 'a', GRAIN => 'year')",
			MetricRequest{Product: "p", Metric: "m", Grain: "year", Dimensions: []string{"a"}}, ""},
		{"SELECT * FROM floe_metric('p', 'm', dimensions => [])", MetricRequest{Product: "p", Metric: "m", Dimensions: []string{}}, ""},
		{"SELECT * FROM floe_metric('p', 'm', grain => 'month'::VARCHAR)", MetricRequest{Product: "p", Metric: "m", Grain: "month"}, ""},
		{"SELECT * FROM floe_metric('p')", MetricRequest{}, "takes the product and the metric"},
		{"SELECT * FROM floe_metric('', 'm')", MetricRequest{}, "not empty"},
		{"SELECT * FROM floe_metric('p', 'm', 'month')", MetricRequest{}, "two positional arguments"},
		{"SELECT * FROM floe_metric('p', 'm', grain => 'month', grain => 'year')", MetricRequest{}, "given twice"},
		{"SELECT * FROM floe_metric('p', 'm', region => 'eu')", MetricRequest{}, `no argument "region"`},
		{"SELECT * FROM floe_metric('p', 'm', grain => 1)", MetricRequest{}, "grain is a string constant"},
		{"SELECT * FROM floe_metric('p', 'm', grain => lower('MONTH'))", MetricRequest{}, "grain is a string constant"},
		{"SELECT * FROM floe_metric(p, 'm')", MetricRequest{}, "the product is a string constant"},
		{"SELECT * FROM floe_metric('p', 'm', dimensions => ['a', upper('b')])", MetricRequest{}, "each dimension is a string constant"},
		{"SELECT * FROM floe_metric('p', (SELECT 'm'))", MetricRequest{}, "the metric is a string constant"},
		{"SELECT * FROM floe_metric('p', 'm', dimensions => [" + strings.Repeat("'a', ", maxMetricDimensions) + "'a'])", MetricRequest{}, "at most 64 dimensions"},
	} {
		n := firstTableFunction(d.parse(t, tc.sql))
		if n == nil {
			t.Fatalf("%s: no floe_metric call found", tc.sql)
		}
		got, err := parseMetricCall(n)
		if tc.err != "" {
			pe, ok := err.(*pgwire.Error)
			if !ok || pe.Code != pgwire.CodeInvalidParameterValue || !strings.Contains(pe.Message, tc.err) {
				t.Errorf("%s: got %v, want 22023 %q", tc.sql, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v; want %+v", tc.sql, got, err, tc.want)
		}
	}
}

// Only unqualified floe_metric (or floe.floe_metric) is the metric
// function: other names stay table functions, which analysis refuses.
func TestIsMetricCall(t *testing.T) {
	d := newTreeDB(t)
	for sql, want := range map[string]bool{
		"SELECT * FROM floe_metric('p', 'm')":            true,
		"SELECT * FROM floe.floe_metric('p', 'm')":       true,
		"SELECT * FROM other.floe_metric('p', 'm')":      false,
		"SELECT * FROM c.floe.floe_metric('p', 'm')":     false,
		"SELECT * FROM read_parquet('x')":                false,
		"SELECT * FROM crm.floe_metric":                  false,
		"SELECT floe_metric('p', 'm')":                   false,
		"SELECT * FROM t, LATERAL floe_metric('p', 'm')": true,
	} {
		var found []node
		collectMetricCalls(d.parse(t, sql), &found)
		if got := len(found) > 0; got != want {
			t.Errorf("%s: found %v, want %v", sql, got, want)
		}
	}
}

// FuzzMetricCall: any strings quoted as literals come back as the request,
// and no tree panics the parser.
func FuzzMetricCall(f *testing.F) {
	d := newTreeDB(f)
	f.Add("sales_pipeline", "open_pipeline_value", "month", "region")
	f.Add("p'; DROP TABLE x; --", "m\"", "", "a'b")
	f.Add("", "\x00", "\\", "[")
	f.Fuzz(func(t *testing.T, product, metric, grain, dim string) {
		for _, s := range []string{product, metric, grain, dim} {
			if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
				t.Skip() // the wire protocol takes UTF-8 text without NUL
			}
		}
		q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
		sql := "SELECT * FROM floe_metric(" + q(product) + ", " + q(metric) + ", grain => " + q(grain) + ", dimensions => [" + q(dim) + "])"
		n := firstTableFunction(d.parse(t, sql))
		if n == nil {
			t.Fatalf("%s: no call found", sql)
		}
		got, err := parseMetricCall(n)
		if product == "" || metric == "" {
			if err == nil {
				t.Fatalf("%s: empty names accepted", sql)
			}
			return
		}
		want := MetricRequest{Product: product, Metric: metric, Grain: grain, Dimensions: []string{dim}}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %+v, %v; want %+v", sql, got, err, want)
		}
	})
}
