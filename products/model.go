// Package products holds data products: curated, versioned objects of the
// catalog that publish tables and views (output ports) with their business
// meaning (domain, owner, description, glossary terms, column docs), the
// metrics a consumer may ask for by name, and the quality expectations Floe
// evaluates on them (issue 20, standard S5).
//
// The package owns the model, its validation, the translation of
// expectations and metrics into SQL, and the service that stores versions
// and runs checks. It knows nothing of HTTP or the SQL wire protocol: the
// management API and the SQL endpoint call it.
package products

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// Limits of one product's definition. They bound what one caller can make
// the server store and evaluate.
const (
	MaxOutputs      = 64
	MaxMetrics      = 64
	MaxExpectations = 128
	MaxTerms        = 64
	MaxTags         = 64
	MaxDimensions   = 32
	MaxValues       = 256
	MaxTextLen      = 4096  // descriptions, docs
	MaxSQLLen       = 16384 // a metric expression or a custom assertion
	MaxColumnDocs   = 1024  // column docs over all outputs
)

// PortKind is what an output port publishes.
type PortKind string

// The kinds of output ports.
const (
	PortTable PortKind = "table"
	PortView  PortKind = "view"
)

// Product is one version of a data product, as its owner defines it.
type Product struct {
	// Warehouse holds every output port.
	Warehouse string `json:"warehouse"`
	// Name identifies the product in its warehouse (lower-case letters,
	// digits and underscores, starting with a letter).
	Name        string            `json:"name"`
	Domain      string            `json:"domain,omitempty"`
	Owner       string            `json:"owner"`
	Description string            `json:"description,omitempty"`
	Terms       []string          `json:"terms,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	Outputs     []Port            `json:"outputs"`
	Metrics     []Metric          `json:"metrics,omitempty"`
	// Expectations are the quality checks Floe evaluates on the outputs.
	Expectations []Expectation `json:"expectations,omitempty"`
	// CheckEvery is how often the expectations are evaluated on a schedule
	// (zero: only on demand).
	CheckEvery Duration `json:"check_every,omitempty"`

	// Version counts the definitions published under Name, from 1; it is
	// set by the service.
	Version int `json:"version"`
	// UpdatedAt and UpdatedBy say when and by whom this version was
	// published; set by the service.
	UpdatedAt time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by"`
}

// Port is one table or view a product publishes.
type Port struct {
	// Name is the port's name within the product (what metrics and
	// expectations refer to); the output's table name when empty.
	Name      string            `json:"name,omitempty"`
	Kind      PortKind          `json:"kind"`
	Namespace catalog.Namespace `json:"namespace"`
	Table     string            `json:"table"`
	// Description says what the output holds, in business terms.
	Description string `json:"description,omitempty"`
	// Columns documents columns by name; written into the output's schema
	// docs where the output is a table.
	Columns map[string]string `json:"columns,omitempty"`
}

// Ident is the port's catalog identifier.
func (p Port) Ident() catalog.Ident { return catalog.Ident{Namespace: p.Namespace, Name: p.Table} }

// Metric is a named business measure over one output port.
type Metric struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Port names the output the metric aggregates.
	Port string `json:"port"`
	// Expr is the aggregate SQL expression, e.g. "sum(amount)".
	Expr string `json:"expr"`
	// Filter is an optional SQL condition on the port's rows, e.g.
	// "stage NOT IN ('won', 'lost')".
	Filter string `json:"filter,omitempty"`
	// TimeColumn is the column grains truncate; empty: the metric has no
	// time dimension.
	TimeColumn string `json:"time_column,omitempty"`
	// Grains are the time grains allowed (day, week, month, quarter, year).
	Grains []string `json:"grains,omitempty"`
	// Dimensions are the columns a consumer may group by.
	Dimensions []string `json:"dimensions,omitempty"`
}

// ExpectationKind is what an expectation checks.
type ExpectationKind string

// The kinds of expectations.
const (
	// Freshness: the port's newest data is at most MaxAge old (the newest
	// value of Column when set, else the current snapshot's commit time).
	Freshness ExpectationKind = "freshness"
	// RowCount: the port's row count lies within [Min, Max].
	RowCount ExpectationKind = "row_count"
	// NotNull: Column has no nulls.
	NotNull ExpectationKind = "not_null"
	// Unique: Column's non-null values are unique.
	Unique ExpectationKind = "unique"
	// AcceptedValues: Column's non-null values are among Values.
	AcceptedValues ExpectationKind = "accepted_values"
	// Assertion: the custom SQL query returns no rows (every row it
	// returns is a failure), as dbt's singular tests.
	Assertion ExpectationKind = "sql"
)

// Expectation is one quality check on a product's output.
type Expectation struct {
	Name   string          `json:"name"`
	Kind   ExpectationKind `json:"kind"`
	Port   string          `json:"port,omitempty"`
	Column string          `json:"column,omitempty"`
	MaxAge Duration        `json:"max_age,omitempty"`
	Min    *int64          `json:"min,omitempty"`
	Max    *int64          `json:"max,omitempty"`
	Values []string        `json:"values,omitempty"`
	SQL    string          `json:"sql,omitempty"`
}

// Duration is a time.Duration that reads and writes as Go's duration
// syntax ("15m", "24h") in JSON and YAML, and also reads "7d".
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ParseDuration parses Go's duration syntax, plus a whole number of days
// ("7d").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" && !strings.ContainsAny(n, "hmsuµn.") {
		var days int64
		if _, err := fmt.Sscanf(n, "%d", &days); err != nil || days < 0 || days > 3650 || fmt.Sprint(days) != n {
			return 0, floe.E(floe.Invalid, "data product", "invalid duration %q", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, floe.E(floe.Invalid, "data product", "invalid duration %q (use e.g. 30m, 24h or 7d)", s)
	}
	return v, nil
}

var (
	nameRE   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
	columnRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
)

// Grains are the time grains a metric may allow, in order.
var Grains = []string{"day", "week", "month", "quarter", "year"}

func invalid(format string, args ...any) error {
	return floe.E(floe.Invalid, "data product", format, args...)
}

func checkText(what, s string, max int) error {
	if !utf8.ValidString(s) {
		return invalid("%s is not valid UTF-8", what)
	}
	if len(s) > max {
		return invalid("%s is longer than %d bytes", what, max)
	}
	if strings.ContainsRune(s, 0) {
		return invalid("%s contains a NUL character", what)
	}
	return nil
}

// Validate checks the definition a caller gives (Version, UpdatedAt and
// UpdatedBy are ignored) and fills in defaults: port names from table
// names. It says what is wrong in terms of the definition.
func (p *Product) Validate() error {
	if !nameRE.MatchString(p.Name) {
		return invalid("invalid product name %q: lower-case letters, digits and underscores, starting with a letter, at most 63", p.Name)
	}
	if p.Warehouse == "" {
		return invalid("product %q: warehouse is required", p.Name)
	}
	if strings.TrimSpace(p.Owner) == "" {
		return invalid("product %q: owner is required (a principal or a role)", p.Name)
	}
	for what, s := range map[string]string{"domain": p.Domain, "owner": p.Owner, "description": p.Description} {
		if err := checkText(what, s, MaxTextLen); err != nil {
			return err
		}
	}
	if len(p.Terms) > MaxTerms {
		return invalid("product %q: at most %d glossary terms", p.Name, MaxTerms)
	}
	for _, t := range p.Terms {
		if err := checkText("glossary term", t, 256); err != nil {
			return err
		}
	}
	if len(p.Tags) > MaxTags {
		return invalid("product %q: at most %d tags", p.Name, MaxTags)
	}
	for k, v := range p.Tags {
		if !columnRE.MatchString(k) {
			return invalid("product %q: invalid tag name %q", p.Name, k)
		}
		if err := checkText("tag "+k, v, 256); err != nil {
			return err
		}
	}
	if p.CheckEvery != 0 && time.Duration(p.CheckEvery) < time.Minute {
		return invalid("product %q: check_every must be at least 1m (or 0 for on demand only)", p.Name)
	}
	ports, err := p.validatePorts()
	if err != nil {
		return err
	}
	if err := p.validateMetrics(ports); err != nil {
		return err
	}
	return p.validateExpectations(ports)
}

func (p *Product) validatePorts() (map[string]Port, error) {
	if len(p.Outputs) == 0 {
		return nil, invalid("product %q publishes no output: list at least one table or view in outputs", p.Name)
	}
	if len(p.Outputs) > MaxOutputs {
		return nil, invalid("product %q: at most %d outputs", p.Name, MaxOutputs)
	}
	ports := map[string]Port{}
	docs := 0
	for i := range p.Outputs {
		o := &p.Outputs[i]
		if o.Kind == "" {
			o.Kind = PortTable
		}
		if o.Kind != PortTable && o.Kind != PortView {
			return nil, invalid("output %d: kind %q is neither table nor view", i+1, o.Kind)
		}
		if len(o.Namespace) == 0 || o.Table == "" {
			return nil, invalid("output %d: namespace and table are required", i+1)
		}
		for _, lvl := range o.Namespace {
			if err := checkText("namespace", lvl, 255); err != nil || lvl == "" {
				return nil, invalid("output %d: invalid namespace %q", i+1, o.Namespace.String())
			}
		}
		if err := checkText("table name", o.Table, 255); err != nil {
			return nil, err
		}
		if o.Name == "" {
			o.Name = strings.ToLower(o.Table)
		}
		if !nameRE.MatchString(o.Name) {
			return nil, invalid("output %d: invalid port name %q (lower-case letters, digits, underscores)", i+1, o.Name)
		}
		if _, dup := ports[o.Name]; dup {
			return nil, invalid("two outputs are named %q: give one a distinct name", o.Name)
		}
		if err := checkText("output description", o.Description, MaxTextLen); err != nil {
			return nil, err
		}
		for col, doc := range o.Columns {
			if !columnRE.MatchString(col) {
				return nil, invalid("output %q: invalid column name %q", o.Name, col)
			}
			if err := checkText("column doc", doc, MaxTextLen); err != nil {
				return nil, err
			}
		}
		docs += len(o.Columns)
		ports[o.Name] = *o
	}
	if docs > MaxColumnDocs {
		return nil, invalid("product %q: at most %d column docs", p.Name, MaxColumnDocs)
	}
	return ports, nil
}

func (p *Product) validateMetrics(ports map[string]Port) error {
	if len(p.Metrics) > MaxMetrics {
		return invalid("product %q: at most %d metrics", p.Name, MaxMetrics)
	}
	seen := map[string]bool{}
	for _, m := range p.Metrics {
		if !nameRE.MatchString(m.Name) {
			return invalid("invalid metric name %q (lower-case letters, digits, underscores)", m.Name)
		}
		if seen[m.Name] {
			return invalid("two metrics are named %q", m.Name)
		}
		seen[m.Name] = true
		if _, ok := ports[m.Port]; !ok {
			return invalid("metric %q: port %q is not an output of the product (outputs: %s)", m.Name, m.Port, portNames(ports))
		}
		if strings.TrimSpace(m.Expr) == "" {
			return invalid("metric %q: expr is required (an aggregate such as sum(amount))", m.Name)
		}
		for what, s := range map[string]string{"expr": m.Expr, "filter": m.Filter} {
			if err := checkText("metric "+m.Name+" "+what, s, MaxSQLLen); err != nil {
				return err
			}
			if strings.Contains(s, ";") {
				return invalid("metric %q: %s must be one expression, without ';'", m.Name, what)
			}
		}
		if err := checkText("metric description", m.Description, MaxTextLen); err != nil {
			return err
		}
		if m.TimeColumn != "" && !columnRE.MatchString(m.TimeColumn) {
			return invalid("metric %q: invalid time_column %q", m.Name, m.TimeColumn)
		}
		if len(m.Grains) > 0 && m.TimeColumn == "" {
			return invalid("metric %q: grains need a time_column", m.Name)
		}
		for _, g := range m.Grains {
			if !slices.Contains(Grains, g) {
				return invalid("metric %q: unknown grain %q (want one of %s)", m.Name, g, strings.Join(Grains, ", "))
			}
		}
		if len(m.Dimensions) > MaxDimensions {
			return invalid("metric %q: at most %d dimensions", m.Name, MaxDimensions)
		}
		for _, d := range m.Dimensions {
			if !columnRE.MatchString(d) {
				return invalid("metric %q: invalid dimension %q", m.Name, d)
			}
		}
	}
	return nil
}

func (p *Product) validateExpectations(ports map[string]Port) error {
	if len(p.Expectations) > MaxExpectations {
		return invalid("product %q: at most %d expectations", p.Name, MaxExpectations)
	}
	seen := map[string]bool{}
	for i := range p.Expectations {
		e := &p.Expectations[i]
		if e.Name == "" {
			e.Name = defaultExpectationName(e)
		}
		if !nameRE.MatchString(e.Name) {
			return invalid("invalid expectation name %q (lower-case letters, digits, underscores)", e.Name)
		}
		if seen[e.Name] {
			return invalid("two expectations are named %q", e.Name)
		}
		seen[e.Name] = true
		if e.Kind != Assertion {
			if _, ok := ports[e.Port]; !ok {
				return invalid("expectation %q: port %q is not an output of the product (outputs: %s)", e.Name, e.Port, portNames(ports))
			}
		}
		needColumn := e.Kind == NotNull || e.Kind == Unique || e.Kind == AcceptedValues
		if needColumn && e.Column == "" {
			return invalid("expectation %q: %s needs a column", e.Name, e.Kind)
		}
		if e.Column != "" && !columnRE.MatchString(e.Column) {
			return invalid("expectation %q: invalid column %q", e.Name, e.Column)
		}
		switch e.Kind {
		case Freshness:
			if e.MaxAge <= 0 {
				return invalid("expectation %q: freshness needs max_age (e.g. 24h)", e.Name)
			}
		case RowCount:
			if e.Min == nil && e.Max == nil {
				return invalid("expectation %q: row_count needs min, max or both", e.Name)
			}
			if e.Min != nil && e.Max != nil && *e.Min > *e.Max {
				return invalid("expectation %q: min %d is above max %d", e.Name, *e.Min, *e.Max)
			}
		case NotNull, Unique:
		case AcceptedValues:
			if len(e.Values) == 0 || len(e.Values) > MaxValues {
				return invalid("expectation %q: accepted_values needs 1 to %d values", e.Name, MaxValues)
			}
			for _, v := range e.Values {
				if err := checkText("accepted value", v, 1024); err != nil {
					return err
				}
			}
		case Assertion:
			if strings.TrimSpace(e.SQL) == "" {
				return invalid("expectation %q: sql needs a query (it passes when the query returns no rows)", e.Name)
			}
			if err := checkText("expectation sql", e.SQL, MaxSQLLen); err != nil {
				return err
			}
			if strings.Contains(strings.TrimRight(strings.TrimSpace(e.SQL), ";"), ";") {
				return invalid("expectation %q: sql must be one statement", e.Name)
			}
		default:
			return invalid("expectation %q: unknown kind %q (want freshness, row_count, not_null, unique, accepted_values or sql)", e.Name, e.Kind)
		}
	}
	return nil
}

func defaultExpectationName(e *Expectation) string {
	parts := []string{string(e.Kind)}
	if e.Port != "" {
		parts = append(parts, e.Port)
	}
	if e.Column != "" {
		parts = append(parts, strings.ToLower(e.Column))
	}
	return strings.Join(parts, "_")
}

func portNames(ports map[string]Port) string {
	names := make([]string, 0, len(ports))
	for n := range ports {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Port returns the output port named name.
func (p *Product) Port(name string) (Port, bool) {
	for _, o := range p.Outputs {
		if o.Name == name {
			return o, true
		}
	}
	return Port{}, false
}

// Metric returns the metric named name.
func (p *Product) Metric(name string) (Metric, bool) {
	for _, m := range p.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}
