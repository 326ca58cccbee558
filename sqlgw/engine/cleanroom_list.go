package engine

import "strings"

// The list analysis rule (docs/cleanrooms.md): a query lists the list
// columns of rows that match, on the allowed join keys, rows of another
// member's table. It outputs list columns, literals and a few scalar
// functions of them; identifiers and join keys are never output,
// filtered on or ordered by; no aggregates, no GROUP BY; DISTINCT and a
// literal LIMIT are allowed. There is no threshold: the list rule reveals
// the attribute values of overlapping rows by design.

// listScalars are the functions a list query may apply to list columns
// and literals.
var listScalars = setOf("lower", "upper", "trim", "coalesce")

// checkList checks a SELECT whose tables all have the list rule (the
// joins are checked already).
func (c *roomCheck) checkList(sel node) error {
	owners := map[string]bool{}
	for _, t := range c.tables {
		owners[t.t.Owner] = true
	}
	if len(owners) < 2 {
		return ruleError(ruleJoin, "a list query joins tables of at least two members on their join keys (INNER JOIN ... ON a.key = b.key): it lists the rows that match")
	}
	if w, ok := sel["where_clause"].(node); ok {
		if err := c.predicate(w); err != nil {
			return err
		}
	}
	if exprs, _ := sel["group_expressions"].([]any); len(exprs) > 0 {
		return ruleError(ruleGroup, "GROUP BY is not allowed under the list rule: use SELECT DISTINCT")
	}
	if sets, _ := sel["group_sets"].([]any); len(sets) > 0 {
		return ruleError(ruleGroup, "GROUP BY is not allowed under the list rule: use SELECT DISTINCT")
	}
	if h, _ := sel["having"].(node); h != nil {
		return ruleError(ruleGroup, "HAVING is not allowed under the list rule")
	}
	c.sel, _ = sel["select_list"].([]any)
	for _, it := range c.sel {
		n, ok := it.(node)
		if !ok {
			return ruleError(ruleOutput, "an output is not an expression")
		}
		if a, _ := n["alias"].(string); a != "" {
			c.outputs[strings.ToLower(a)] = true
		}
		if err := c.listOutput(n); err != nil {
			return err
		}
	}
	mods, _ := sel["modifiers"].([]any)
	for _, m := range mods {
		if err := c.listModifier(m); err != nil {
			return err
		}
	}
	return nil
}

// listOutput checks one output (or ORDER BY key) of a list query: a list
// column, a literal, a cast or an allowed function of those.
func (c *roomCheck) listOutput(n node) error {
	switch n["class"] {
	case "CONSTANT":
		return nil
	case "COLUMN_REF":
		_, err := c.dimension(n, ruleOutput)
		return err
	case "CAST":
		if n["try_cast"] == true {
			return ruleError(ruleFunction, "TRY_CAST is not allowed")
		}
		ch, ok := n["child"].(node)
		if !ok {
			return ruleError(ruleOutput, "a cast without an expression")
		}
		return c.listOutput(ch)
	case "OPERATOR":
		if n["type"] != "OPERATOR_COALESCE" {
			break
		}
		ch, _ := n["children"].([]any)
		for _, x := range ch {
			xn, ok := x.(node)
			if !ok {
				return ruleError(ruleOutput, "coalesce of something that is not an expression")
			}
			if err := c.listOutput(xn); err != nil {
				return err
			}
		}
		return nil
	case "STAR":
		return ruleError(ruleOutput, "SELECT * would output identifiers and join keys: name the list columns")
	case "FUNCTION":
		name, _ := n["function_name"].(string)
		name = strings.ToLower(name)
		if s, _ := n["schema"].(string); s != "" || !listScalars[name] {
			return ruleError(ruleFunction, "function %s is not allowed under the list rule (allowed: lower, upper, trim, coalesce)", name)
		}
		if n["distinct"] == true || n["filter"] != nil || !empty(n["order_bys"]) {
			return ruleError(ruleFunction, "DISTINCT, FILTER and ORDER BY in %s are not allowed", name)
		}
		list, _ := n["arguments"].([]any)
		if list == nil {
			list, _ = n["children"].([]any)
		}
		for _, a := range list {
			an, ok := a.(node)
			if !ok {
				return ruleError(ruleFunction, "function %s: an argument is not an expression", name)
			}
			if e, ok := an["expression"].(node); ok {
				if nm, _ := an["name"].(string); nm != "" {
					return ruleError(ruleFunction, "named arguments are not allowed")
				}
				an = e
			}
			if err := c.listOutput(an); err != nil {
				return err
			}
		}
		return nil
	}
	class, _ := n["class"].(string)
	return ruleError(ruleOutput, "%s expressions are not allowed in the outputs of a list query: output list columns", strings.ToLower(class))
}

// listModifier checks ORDER BY (outputs and list columns), DISTINCT
// (without ON) and LIMIT/OFFSET (literals) of a list query.
func (c *roomCheck) listModifier(m any) error {
	n, _ := m.(node)
	switch n["type"] {
	case "ORDER_MODIFIER":
		return c.orderBy(n, c.listOutput)
	case "LIMIT_MODIFIER":
		for _, k := range []string{"limit", "offset"} {
			if v, ok := n[k].(node); ok && v["class"] != "CONSTANT" {
				return ruleError(ruleOrder, "LIMIT and OFFSET take literals")
			}
		}
		return nil
	case "DISTINCT_MODIFIER":
		if !empty(n["distinct_on_targets"]) {
			return ruleError(ruleStatement, "DISTINCT ON is not allowed: use SELECT DISTINCT")
		}
		return nil
	}
	return ruleError(ruleStatement, "the modifier %v is not allowed", n["type"])
}
