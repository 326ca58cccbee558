package engine

import (
	crand "crypto/rand"
	"database/sql/driver"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/floe-lake/floe/cleanroom"
)

// Differential privacy in clean rooms (issue 22, docs/cleanrooms.md).
// When a collaboration's privacy is on, checkRoom plans the noise
// (planDP): every output is a dimension, a literal or one aggregate
// (COUNT, COUNT(DISTINCT), SUM, AVG: no expressions of aggregates, no
// HAVING, ORDER BY dimensions only, as those would use exact values); AVG
// becomes SUM with a hidden COUNT beside it; and instead of the threshold
// test the query outputs, hidden, each table's exact COUNT(DISTINCT
// identifier). The configured tables are read with at most
// max_contributions rows per identifier and SUM/AVG columns clamped to
// their ranges (projectRoom). The result (dpRow) adds noise to every
// aggregate and to the hidden counts, suppresses the rows whose noisy
// identifier count is below a threshold, and outputs the noisy values:
// the exact ones never leave the engine.

// ruleDP names the differential privacy rule in refusals.
const ruleDP = "differential privacy"

// Kinds of DP outputs.
const (
	dpNone = iota
	dpCount
	dpSum
	dpAvg
)

// dpOut is how one client column is noised.
type dpOut struct {
	kind int
	// delta is the L1 sensitivity of the column (of the sum for AVG).
	delta float64
	// count is the index of the hidden COUNT of an AVG, in the row.
	count int
}

// dpThreshold is one table's hidden distinct-identifier count.
type dpThreshold struct {
	col int
	min float64
}

// dpPlan is how one clean-room query's outputs are noised.
type dpPlan struct {
	privacy cleanroom.Privacy
	outs    []dpOut
	// thresholds are the tables' hidden identifier counts; their
	// sensitivity is bound.
	thresholds []dpThreshold
	// bound is the product of the tables' per-identifier row bounds: how
	// many output rows' inputs one identifier can reach.
	bound float64
	// values is how many noisy values a row has (the per-query ε is split
	// evenly over them).
	values int
	hidden int
	// hiddenNodes are the hidden columns to append.
	hiddenNodes []any
}

// epsilon is the ε of one noisy value.
func (p *dpPlan) epsilon() float64 { return p.privacy.Epsilon / float64(p.values) }

// scale is the noise's scale for sensitivity delta: the Laplace
// mechanism's b = Δ/ε, the Gaussian's σ = Δ·sqrt(2·ln(1.25/δ))/ε with δ
// split as ε is (Δ₁ bounds Δ₂).
func (p *dpPlan) scale(delta float64) float64 {
	eps := p.epsilon()
	if p.privacy.Mechanism == cleanroom.Gaussian {
		d := p.privacy.Delta / float64(p.values)
		return delta * math.Sqrt(2*math.Log(1.25/d)) / eps
	}
	return delta / eps
}

// argColumn returns an aggregate's single column argument.
func argColumn(n node) node {
	list, _ := n["arguments"].([]any)
	if list == nil {
		list, _ = n["children"].([]any)
	}
	if len(list) != 1 {
		return nil
	}
	an, _ := list[0].(node)
	if e, ok := an["expression"].(node); ok {
		an = e
	}
	return an
}

// countNode is COUNT([DISTINCT] alias.col) AS as.
func countNode(distinct bool, alias, col, as string) node {
	return node{
		"class": "FUNCTION", "type": "FUNCTION", "alias": as, "function_name": "count", "schema": "", "catalog": "",
		"filter": nil, "order_bys": node{"type": "ORDER_MODIFIER", "orders": []any{}}, "distinct": distinct,
		"is_operator": false, "export_state": false, "qualified_name": node{"path": []any{"count"}},
		"arguments": []any{node{"name": "", "expression": node{"class": "COLUMN_REF", "type": "COLUMN_REF", "alias": "",
			"column_names": []any{alias, col}}}},
	}
}

// planDP checks a query against differential privacy's extra rules and
// plans its noise; it rewrites AVG into SUM and records the hidden
// columns to append.
func (c *roomCheck) planDP(sel node, p cleanroom.Privacy) (*dpPlan, error) {
	if h, ok := sel["having"].(node); ok && h != nil {
		return nil, ruleError(ruleDP, "HAVING is not allowed under differential privacy: it would filter on exact aggregates")
	}
	plan := &dpPlan{privacy: p, bound: 1}
	for _, t := range c.tables {
		plan.bound *= float64(t.t.Rule.Bound())
	}
	hiddenAt := len(c.sel)
	for i, t := range c.tables {
		plan.hiddenNodes = append(plan.hiddenNodes, countNode(true, t.alias, t.t.Identifier, thresholdAlias+"_ids_"+strconv.Itoa(i)))
		plan.thresholds = append(plan.thresholds, dpThreshold{col: hiddenAt + i, min: float64(t.t.Rule.MinIdentifiers)})
		plan.values++
	}
	for _, it := range c.sel {
		n, _ := it.(node)
		out := dpOut{}
		switch n["class"] {
		case "CONSTANT", "COLUMN_REF":
		case "FUNCTION":
			name, _ := n["function_name"].(string)
			name = strings.ToLower(name)
			if !aggregates[name] {
				return nil, ruleError(ruleDP, "under differential privacy an output is a dimension or one aggregate: %s of aggregates is not allowed", name)
			}
			switch name {
			case "count", "count_star":
				out = dpOut{kind: dpCount, delta: plan.bound}
				plan.values++
			case "sum", "avg":
				arg := argColumn(n)
				parts, _ := arg["column_names"].([]any)
				if len(parts) != 2 {
					return nil, ruleError(ruleDP, "%s takes one column", name)
				}
				alias, _ := parts[0].(string)
				col, _ := parts[1].(string)
				t := c.alias[alias]
				if t == nil {
					return nil, ruleError(ruleDP, "%s takes a column of a configured table", name)
				}
				r, ok := t.t.Rule.Ranges[col]
				if !ok {
					return nil, ruleError(ruleDP, "%s(%s.%s): configured table %q declares no range for column %q: under differential privacy SUM and AVG take columns with a declared range", name, alias, col, t.t.Name, col)
				}
				out = dpOut{kind: dpSum, delta: plan.bound * math.Max(math.Abs(r.Lo), math.Abs(r.Hi))}
				plan.values++
				if name == "avg" {
					out.kind = dpAvg
					out.count = hiddenAt + len(plan.hiddenNodes)
					plan.hiddenNodes = append(plan.hiddenNodes, countNode(false, alias, col, thresholdAlias+"_n_"+strconv.Itoa(out.count)))
					plan.values++
					n["function_name"] = "sum"
					n["qualified_name"] = node{"path": []any{"sum"}}
					if a, _ := n["alias"].(string); a == "" {
						n["alias"] = "avg"
					}
				}
			}
		default:
			return nil, ruleError(ruleDP, "under differential privacy an output is a dimension or one aggregate (no expressions of aggregates)")
		}
		plan.outs = append(plan.outs, out)
	}
	mods, _ := sel["modifiers"].([]any)
	for _, m := range mods {
		mn, _ := m.(node)
		orders, _ := mn["orders"].([]any)
		for _, o := range orders {
			on, _ := o.(node)
			e, _ := on["expression"].(node)
			if !c.dpOrderKey(e, plan) {
				return nil, ruleError(ruleDP, "under differential privacy ORDER BY takes dimensions only: ordering by aggregates would use their exact values")
			}
		}
	}
	plan.hidden = len(plan.hiddenNodes)
	return plan, nil
}

// dpOrderKey reports whether an ORDER BY key names a dimension: a
// dimension column, or the position or alias of an output that is not an
// aggregate.
func (c *roomCheck) dpOrderKey(e node, plan *dpPlan) bool {
	switch e["class"] {
	case "CONSTANT":
		i, err := position(e, len(c.sel))
		return err == nil && plan.outs[i].kind == dpNone
	case "COLUMN_REF":
		parts, _ := e["column_names"].([]any)
		if len(parts) == 1 {
			s, _ := parts[0].(string)
			for i, it := range c.sel {
				n, _ := it.(node)
				if a, _ := n["alias"].(string); a != "" && strings.EqualFold(a, s) {
					return plan.outs[i].kind == dpNone
				}
			}
		}
		_, err := c.dimension(e, ruleDP)
		return err == nil
	}
	return false
}

// noise draws the mechanism's noise; each execution has its own source,
// seeded from crypto/rand (never from the query).
type noise struct {
	r    *rand.Rand
	plan *dpPlan
}

func newNoise(plan *dpPlan) *noise {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // crypto/rand.Read never fails (Go 1.24+)
	return &noise{r: rand.New(rand.NewChaCha8(seed)), plan: plan}
}

// draw returns noise for a value of sensitivity delta: Laplace as the
// difference of two exponentials of mean b, Gaussian as σ·N(0,1).
func (n *noise) draw(delta float64) float64 {
	s := n.plan.scale(delta)
	if n.plan.privacy.Mechanism == cleanroom.Gaussian {
		return s * n.r.NormFloat64()
	}
	return s * (n.r.ExpFloat64() - n.r.ExpFloat64())
}

// number reads an aggregate's value (NULL: 0).
func number(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		return x
	case float32:
		return float64(x)
	}
	return 0
}

// row noises one result row in place: false when the row is suppressed
// (a noisy identifier count below its threshold). Counts are rounded to
// integers and kept at 0 or above; an average is the noisy sum over the
// noisy count (at least 1). Post-processing of noisy values keeps their
// privacy.
func (n *noise) row(buf []driver.Value) bool {
	keep := true
	for _, t := range n.plan.thresholds {
		if number(buf[t.col])+n.draw(n.plan.bound) < t.min {
			keep = false
		}
	}
	for i, o := range n.plan.outs {
		switch o.kind {
		case dpCount:
			buf[i] = int64(math.Max(0, math.Round(number(buf[i])+n.draw(o.delta))))
		case dpSum:
			buf[i] = number(buf[i]) + n.draw(o.delta)
		case dpAvg:
			s := number(buf[i]) + n.draw(o.delta)
			cnt := math.Max(1, number(buf[o.count])+n.draw(n.plan.bound))
			buf[i] = s / cnt
		}
	}
	return keep
}
