package restcat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe"
)

// Limits on a scan filter, which comes from the client: its JSON nesting
// (and/or/not chains nest one object per level) and its size in tokens
// (an in-list of many values counts each). iceberg-go's parser re-reads
// each child, so nesting costs quadratic time without a bound.
const (
	maxFilterDepth  = 64
	maxFilterTokens = 200_000
)

// parseFilter parses a planTableScan "filter" (the spec's Expression JSON:
// true/false, and/or/not, unary, literal and set predicates over column
// names or transforms) against schema, and binds it to check that every
// column exists and every literal fits its column's type. Column names
// match exactly, or ignoring case when caseSensitive is false. Errors are
// floe.Invalid. canon is the bound filter's JSON, which identifies it in
// plan caches (the request's bytes when it cannot be written).
func parseFilter(raw json.RawMessage, schema *iceberg.Schema, caseSensitive bool) (expr iceberg.BooleanExpression, canon string, err error) {
	defer func() {
		if p := recover(); p != nil {
			expr, err = nil, floe.E(floe.Invalid, "", "invalid filter: %v", p)
		}
	}()
	if err := checkFilterShape(raw); err != nil {
		return nil, "", floe.Wrap(floe.Invalid, err, "invalid filter: %v", err)
	}
	if !caseSensitive {
		if raw, err = canonicalTerms(raw, schema); err != nil {
			return nil, "", floe.Wrap(floe.Invalid, err, "invalid filter: %v", err)
		}
	}
	e, err := iceberg.ParseExpr(raw, schema)
	if err != nil {
		return nil, "", floe.Wrap(floe.Invalid, err, "invalid filter: %s", trimMsg(err.Error()))
	}
	bound, err := iceberg.BindExpr(schema, e, true)
	if err != nil {
		return nil, "", floe.Wrap(floe.Invalid, err, "invalid filter: %s", trimMsg(err.Error()))
	}
	b, err := json.Marshal(bound)
	if err != nil {
		b = append([]byte("raw:"), raw...)
	}
	return e, string(b), nil
}

// checkFilterShape checks that raw is one JSON value within the nesting
// and size limits.
func checkFilterShape(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	depth, tokens := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("malformed JSON: %w", err)
		}
		if tokens++; tokens > maxFilterTokens {
			return fmt.Errorf("more than %d tokens", maxFilterTokens)
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if depth++; depth > maxFilterDepth {
					return fmt.Errorf("nested deeper than %d levels", maxFilterDepth)
				}
			default:
				depth--
			}
		}
	}
	if tokens == 0 {
		return errors.New("empty expression")
	}
	return nil
}

// canonicalTerms rewrites the column names of a filter to the schema's
// spelling, matching them ignoring case; a name that matches nothing is
// left for the parser to reject.
func canonicalTerms(raw []byte, schema *iceberg.Schema) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // literals keep their exact digits
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var walk func(v any)
	walk = func(v any) {
		switch n := v.(type) {
		case map[string]any:
			for k, c := range n {
				if s, ok := c.(string); ok && k == "term" {
					if f, ok := schema.FindFieldByNameCaseInsensitive(s); ok {
						if name, ok := schema.FindColumnName(f.ID); ok {
							n[k] = name
						}
					}
					continue
				}
				if k == "term" || k == "child" || k == "left" || k == "right" {
					walk(c)
				}
			}
		}
	}
	walk(v)
	return json.Marshal(v)
}
