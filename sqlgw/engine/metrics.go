package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// MetricFunction is the table function that answers a data product's
// metric by name:
//
//	SELECT * FROM floe_metric('sales_pipeline', 'open_pipeline_value',
//	                          grain => 'month', dimensions => ['region'])
//
// Its first two arguments are the product and the metric; grain (one of
// the metric's grains), dimensions (a list of, or one, allowed dimension)
// and warehouse (default: the endpoint's) are named. Every argument is a
// string constant. The call becomes a subquery of the metric's SQL as the
// products package writes it from the definition (Options.Metrics), which
// is then checked and resolved like the rest of the statement: the caller
// reads the product's outputs with its own rights, filters and masks.
const MetricFunction = "floe_metric"

// MetricRequest is one floe_metric call.
type MetricRequest struct {
	Warehouse  string
	Product    string
	Metric     string
	Grain      string
	Dimensions []string
}

// Metrics writes the SQL answering a metric (products.Product.MetricSQL)
// for a caller who may see the product. Its errors are floe errors: a
// product or metric that does not exist (or that the caller may not see)
// floe.NotFound, a grain or dimension the metric does not allow
// floe.Invalid.
type Metrics interface {
	MetricSQL(ctx context.Context, c Caller, req MetricRequest) (string, error)
}

// maxMetricDimensions bounds the dimensions of one call (a metric allows
// at most 64 columns of its port anyway).
const maxMetricDimensions = 64

// isMetricCall reports whether n is a TABLE_FUNCTION node calling
// floe_metric (unqualified, or in schema floe).
func isMetricCall(n node) bool {
	if n["type"] != "TABLE_FUNCTION" {
		return false
	}
	f, ok := n["function"].(node)
	if !ok || f["class"] != "FUNCTION" {
		return false
	}
	name, _ := f["function_name"].(string)
	schema, _ := f["schema"].(string)
	catalog, _ := f["catalog"].(string)
	return strings.EqualFold(name, MetricFunction) && catalog == "" && (schema == "" || strings.EqualFold(schema, "floe"))
}

// badMetricCall is the error of a malformed floe_metric call.
func badMetricCall(format string, args ...any) error {
	return &pgwire.Error{Code: pgwire.CodeInvalidParameterValue, Message: fmt.Sprintf(MetricFunction+": "+format, args...),
		Hint: "floe_metric('product', 'metric', grain => 'month', dimensions => ['region'])"}
}

// parseMetricCall reads the arguments of a floe_metric TABLE_FUNCTION node.
func parseMetricCall(n node) (MetricRequest, error) {
	var req MetricRequest
	f, _ := n["function"].(node)
	args, _ := f["arguments"].([]any)
	positional := 0
	seen := map[string]bool{}
	for _, a := range args {
		an, _ := a.(node)
		expr, _ := an["expression"].(node)
		name, _ := an["name"].(string)
		name = strings.ToLower(name)
		if name == "" {
			var s string
			var err error
			switch positional {
			case 0:
				s, err = metricString(expr, "the product")
				req.Product = s
			case 1:
				s, err = metricString(expr, "the metric")
				req.Metric = s
			default:
				return req, badMetricCall("takes two positional arguments (product, metric); name the others (grain => ..., dimensions => ...)")
			}
			if err != nil {
				return req, err
			}
			positional++
			continue
		}
		if seen[name] {
			return req, badMetricCall("argument %s is given twice", name)
		}
		seen[name] = true
		var err error
		switch name {
		case "grain":
			req.Grain, err = metricString(expr, "grain")
		case "warehouse":
			req.Warehouse, err = metricString(expr, "warehouse")
		case "dimensions":
			req.Dimensions, err = metricStrings(expr)
		default:
			return req, badMetricCall("has no argument %q (it takes grain, dimensions and warehouse)", name)
		}
		if err != nil {
			return req, err
		}
	}
	if positional < 2 {
		return req, badMetricCall("takes the product and the metric's names")
	}
	if req.Product == "" || req.Metric == "" {
		return req, badMetricCall("the product and the metric's names are not empty")
	}
	return req, nil
}

// metricString reads a string constant.
func metricString(expr node, what string) (string, error) {
	for expr != nil && expr["class"] == "CAST" {
		expr, _ = expr["child"].(node)
	}
	if expr != nil && expr["class"] == "CONSTANT" {
		if lit, ok := expr["literal"].(node); ok {
			if kind, _ := lit["kind"].(string); kind == "STRING" || kind == "VARCHAR" {
				if s, ok := lit["text"].(string); ok {
					return s, nil
				}
			}
		}
	}
	return "", badMetricCall("%s is a string constant", what)
}

// metricStrings reads dimensions: a list of string constants, or one.
func metricStrings(expr node) ([]string, error) {
	if expr != nil && expr["class"] == "FUNCTION" {
		if name, _ := expr["function_name"].(string); strings.EqualFold(name, "list_value") {
			items, _ := expr["arguments"].([]any)
			if len(items) > maxMetricDimensions {
				return nil, badMetricCall("at most %d dimensions", maxMetricDimensions)
			}
			out := make([]string, 0, len(items))
			for _, it := range items {
				in, _ := it.(node)
				e, _ := in["expression"].(node)
				if e == nil {
					e = in // older trees list the expressions themselves
				}
				s, err := metricString(e, "each dimension")
				if err != nil {
					return nil, err
				}
				out = append(out, s)
			}
			return out, nil
		}
	}
	s, err := metricString(expr, "dimensions (a list of names, or one)")
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

// expandMetrics turns every floe_metric call in the tree into a subquery
// of the metric's SQL; it reports whether it found one.
func (ss *session) expandMetrics(ctx context.Context, stmt node) (bool, error) {
	var calls []node
	collectMetricCalls(stmt, &calls)
	for _, n := range calls {
		req, err := parseMetricCall(n)
		if err != nil {
			return false, err
		}
		if ss.e.opts.Metrics == nil {
			return false, unsupported("data product metrics are not available on this SQL endpoint")
		}
		if req.Warehouse == "" {
			req.Warehouse = ss.e.opts.Warehouse
		}
		sql, err := ss.e.opts.Metrics.MetricSQL(ctx, Caller{Subject: ss.sub, Unrestricted: ss.unrestricted, TokenID: ss.tokenID}, req)
		if err != nil {
			return false, metricError(err)
		}
		alias, _ := n["alias"].(string)
		if alias == "" {
			n["alias"] = req.Metric
		}
		if err := ss.replaceView(ctx, &tableRef{n: n, path: []string{req.Metric}}, sql); err != nil {
			return false, err
		}
	}
	return len(calls) > 0, nil
}

// metricError maps the products service's refusals to SQLSTATEs: a
// product or metric not found 42704, a grain or dimension not allowed
// 22023 (the mapping of floe kinds, pgwire.kindCodes).
func metricError(err error) error {
	switch floe.KindOf(err) {
	case floe.NotFound:
		return &pgwire.Error{Code: pgwire.CodeUndefinedObject, Message: floe.PublicMessage(err), Err: err}
	case floe.Invalid:
		return &pgwire.Error{Code: pgwire.CodeInvalidParameterValue, Message: floe.PublicMessage(err), Err: err}
	}
	return err
}

// collectMetricCalls appends the floe_metric calls of a tree.
func collectMetricCalls(v any, out *[]node) {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			collectMetricCalls(c, out)
		}
	case node:
		if isMetricCall(x) {
			*out = append(*out, x)
			return
		}
		for _, c := range x {
			collectMetricCalls(c, out)
		}
	}
}
