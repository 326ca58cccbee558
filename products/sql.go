package products

import (
	"fmt"
	"slices"
	"strings"

	"github.com/floe-lake/floe"
)

// QuoteIdent quotes one SQL identifier for Floe's SQL endpoint.
func QuoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// quoteLiteral quotes a SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Relation is the port's fully qualified name for Floe's SQL endpoint:
// "warehouse"."namespace"."table", a nested namespace as one quoted part.
func (p *Product) Relation(port Port) string {
	return QuoteIdent(p.Warehouse) + "." + QuoteIdent(port.Namespace.String()) + "." + QuoteIdent(port.Table)
}

// CheckQuery is how an expectation is evaluated: a SQL statement returning
// one row whose first column is the observed value (a count or, for a
// freshness on a column, the newest value), or, for an assertion, the
// failing rows. Freshness on the commit time needs no SQL: Query is empty.
type CheckQuery struct {
	SQL string
	// Assertion is set when the query's rows are the failures (kind sql).
	Assertion bool
}

// Query returns the SQL that evaluates e on product p.
func (p *Product) Query(e Expectation) (CheckQuery, error) {
	if e.Kind == Assertion {
		return CheckQuery{SQL: strings.TrimRight(strings.TrimSpace(e.SQL), "; \n\t"), Assertion: true}, nil
	}
	port, ok := p.Port(e.Port)
	if !ok {
		return CheckQuery{}, invalid("expectation %q: no output named %q", e.Name, e.Port)
	}
	rel := p.Relation(port)
	col := QuoteIdent(e.Column)
	switch e.Kind {
	case Freshness:
		if e.Column == "" {
			return CheckQuery{}, nil
		}
		return CheckQuery{SQL: fmt.Sprintf("SELECT max(%s) FROM %s", col, rel)}, nil
	case RowCount:
		return CheckQuery{SQL: "SELECT count(*) FROM " + rel}, nil
	case NotNull:
		return CheckQuery{SQL: fmt.Sprintf("SELECT count(*) FROM %s WHERE %s IS NULL", rel, col)}, nil
	case Unique:
		return CheckQuery{SQL: fmt.Sprintf("SELECT count(*) FROM (SELECT %s FROM %s WHERE %s IS NOT NULL GROUP BY %s HAVING count(*) > 1) AS dup", col, rel, col, col)}, nil
	case AcceptedValues:
		vals := make([]string, len(e.Values))
		for i, v := range e.Values {
			vals[i] = quoteLiteral(v)
		}
		return CheckQuery{SQL: fmt.Sprintf("SELECT count(*) FROM %s WHERE %s IS NOT NULL AND CAST(%s AS VARCHAR) NOT IN (%s)", rel, col, col, strings.Join(vals, ", "))}, nil
	}
	return CheckQuery{}, invalid("expectation %q: unknown kind %q", e.Name, e.Kind)
}

// MetricRequest asks for a metric at a grain and by dimensions.
type MetricRequest struct {
	Metric string `json:"metric"`
	// Grain truncates the metric's time column (empty: no time dimension).
	Grain string `json:"grain,omitempty"`
	// Dimensions are columns to group by, among the metric's allowed ones.
	Dimensions []string `json:"dimensions,omitempty"`
}

// MetricSQL is the query answering req: one row per group, the grain's
// period first (column named after the grain), then the dimensions in the
// order asked, then the metric's value (column named after the metric),
// ordered by every group column. Nothing a consumer writes goes into it
// except names checked against the definition.
func (p *Product) MetricSQL(req MetricRequest) (string, error) {
	m, ok := p.Metric(req.Metric)
	if !ok {
		names := make([]string, len(p.Metrics))
		for i, mm := range p.Metrics {
			names[i] = mm.Name
		}
		return "", floe.E(floe.NotFound, "metric", "product %q has no metric %q (metrics: %s)", p.Name, req.Metric, strings.Join(names, ", "))
	}
	port, ok := p.Port(m.Port)
	if !ok {
		return "", invalid("metric %q: no output named %q", m.Name, m.Port)
	}
	var group []string
	var sel []string
	if req.Grain != "" {
		if m.TimeColumn == "" {
			return "", invalid("metric %q has no time dimension: ask without a grain", m.Name)
		}
		if !slices.Contains(m.Grains, req.Grain) {
			return "", invalid("metric %q allows the grains %s, not %q", m.Name, strings.Join(m.Grains, ", "), req.Grain)
		}
		g := fmt.Sprintf("CAST(date_trunc(%s, %s) AS DATE)", quoteLiteral(req.Grain), QuoteIdent(m.TimeColumn))
		sel = append(sel, g+" AS "+QuoteIdent(req.Grain))
		group = append(group, g)
	}
	seen := map[string]bool{}
	for _, d := range req.Dimensions {
		if !slices.Contains(m.Dimensions, d) {
			return "", invalid("metric %q cannot be grouped by %q (allowed dimensions: %s)", m.Name, d, strings.Join(m.Dimensions, ", "))
		}
		if seen[d] {
			return "", invalid("dimension %q is asked twice", d)
		}
		seen[d] = true
		sel = append(sel, QuoteIdent(d))
		group = append(group, QuoteIdent(d))
	}
	sel = append(sel, "("+m.Expr+") AS "+QuoteIdent(m.Name))
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + p.Relation(port)
	if m.Filter != "" {
		q += " WHERE (" + m.Filter + ")"
	}
	if len(group) > 0 {
		q += " GROUP BY " + strings.Join(group, ", ")
		ord := make([]string, len(group))
		for i := range group {
			ord[i] = fmt.Sprint(i + 1)
		}
		q += " ORDER BY " + strings.Join(ord, ", ")
	}
	return q, nil
}
