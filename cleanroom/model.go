// Package cleanroom holds clean rooms (issue 22): collaborations in which
// members analyse their combined data through Floe's SQL endpoint without
// seeing each other's rows.
//
// A Collaboration has members (principals of this Floe; recipients of
// other organisations are a later slice) and configured tables: one table
// of a member each, with the columns the others may use, the join keys,
// the dimension columns and the identifier column, under an aggregation
// analysis rule (at least MinIdentifiers distinct identifiers behind every
// output row). The SQL engine (sqlgw/engine) checks each query of a
// collaboration against those rules on the statement's syntax tree, reads
// the configured tables with their owners' rights, and suppresses output
// rows below the threshold; this package owns the model, its validation
// and the service that stores collaborations and their query logs. It
// knows nothing of HTTP or the SQL wire protocol.
//
// Besides the aggregation rule, a configured table may have the list rule
// (its columns listed for rows matching another member's table on the
// join keys, no threshold) or the custom rule (read only by approved
// query templates, template.go).
//
// Differential privacy (Privacy on the collaboration, row bounds and
// clamping ranges on the rules) adds calibrated noise to every aggregate
// in the engine, and a privacy budget (Budget, budget.go) charged per
// query stops differencing attacks up to the budget (docs/cleanrooms.md).
package cleanroom

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// Bounds of what one caller can make the server store.
const (
	// MaxCollaborations bounds the collaborations of a server.
	MaxCollaborations = 1000
	// MaxMembers bounds the members of one collaboration.
	MaxMembers = 32
	// MaxTables bounds the configured tables of one collaboration.
	MaxTables = 32
	// MaxColumns bounds each column list of a configured table.
	MaxColumns = 256
	// MaxTextLen bounds a description.
	MaxTextLen = 4096
	// MaxMinIdentifiers bounds an aggregation rule's threshold.
	MaxMinIdentifiers = 1_000_000
	// KeepQueries is how many query log entries of a collaboration are
	// kept (the newest).
	KeepQueries = 10_000
)

// Collaboration is a clean room: its members, their configured tables
// and who receives results.
type Collaboration struct {
	// Name identifies the collaboration on this server (lower-case
	// letters, digits and underscores, starting with a letter).
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Creator is the principal that created it; it manages the members.
	Creator   string    `json:"creator"`
	CreatedAt time.Time `json:"created_at"`
	Members   []Member  `json:"members"`
	// Tables are the configured tables, in the order they were added.
	Tables []ConfiguredTable `json:"tables"`
	// ResultReceivers are the members who may run queries and receive
	// their results; empty: every member.
	ResultReceivers []string `json:"result_receivers,omitempty"`
	// Privacy turns differential privacy on for every query of the
	// collaboration (nil: off). Its budget is kept apart, in the store
	// (Budget), because queries spend it.
	Privacy *Privacy `json:"privacy,omitempty"`
	// Version counts the collaboration's changes, from 1; set by the
	// service (optimistic concurrency of the store).
	Version int `json:"version"`
}

// Mechanisms of differential privacy.
const (
	// Laplace adds Laplace noise of scale Δ₁/ε (pure ε-DP).
	Laplace = "laplace"
	// Gaussian adds Gaussian noise of standard deviation
	// Δ·sqrt(2·ln(1.25/δ))/ε ((ε, δ)-DP for ε < 1).
	Gaussian = "gaussian"
)

// Privacy is a collaboration's differential privacy: the mechanism and
// what one query spends of the budget. The charge is split evenly over
// the noisy values a query computes per output row (docs/cleanrooms.md).
type Privacy struct {
	// Mechanism is Laplace or Gaussian.
	Mechanism string `json:"mechanism"`
	// Epsilon is what one query charges to the budget.
	Epsilon float64 `json:"epsilon"`
	// Delta is the Gaussian mechanism's δ (0 for Laplace).
	Delta float64 `json:"delta,omitempty"`
}

// Validate checks a privacy setting.
func (p *Privacy) Validate() error {
	if !(p.Epsilon > 0 && p.Epsilon <= MaxEpsilon) {
		return invalid("privacy: epsilon per query must be above 0 and at most %g", float64(MaxEpsilon))
	}
	if p.Epsilon < 1e-6 {
		return invalid("privacy: epsilon per query must be at least 0.000001 (budgets count in millionths)")
	}
	switch p.Mechanism {
	case Laplace:
		if p.Delta != 0 {
			return invalid("privacy: the laplace mechanism takes no delta")
		}
	case Gaussian:
		if !(p.Delta > 0 && p.Delta < 1e-3) {
			return invalid("privacy: the gaussian mechanism needs 0 < delta < 0.001")
		}
		if p.Epsilon >= 1 {
			return invalid("privacy: the gaussian mechanism's calibration holds for epsilon below 1")
		}
	default:
		return invalid("privacy: mechanism %q: use %q or %q", p.Mechanism, Laplace, Gaussian)
	}
	return nil
}

// MaxEpsilon bounds ε per query and per budget period.
const MaxEpsilon = 1_000_000

// MaxContributions bounds a rule's per-identifier row bound.
const MaxContributions = 1000

// Budget is a collaboration's privacy budget: Epsilon per Period, of
// which Spent is used in the period that began at PeriodStart.
type Budget struct {
	Collaboration string        `json:"collaboration"`
	Epsilon       float64       `json:"epsilon"`
	Period        time.Duration `json:"-"`
	// PeriodText is Period as text ("24h0m0s") in JSON.
	PeriodText  string    `json:"period"`
	Spent       float64   `json:"spent"`
	Remaining   float64   `json:"remaining"`
	PeriodStart time.Time `json:"period_start"`
	// Refresh is when the budget is restored in full.
	Refresh time.Time `json:"refresh"`
}

// RecipientPrefix starts the member name of a recipient: another
// organisation's identity registered here (package sharing), which signs
// in with its recipient bearer token. Principal names cannot hold ':', so
// no principal's name starts with it.
const RecipientPrefix = "recipient:"

// IsRecipient reports whether a member (or subject) name is a recipient's.
func IsRecipient(name string) bool { return strings.HasPrefix(name, RecipientPrefix) }

// Member is a principal of this Floe or a recipient (RecipientPrefix)
// taking part in a collaboration.
type Member struct {
	Principal string `json:"principal"`
	// PrincipalID pins the principal: a principal created later under the
	// same name is not a member.
	PrincipalID string    `json:"principal_id,omitempty"`
	AddedBy     string    `json:"added_by"`
	AddedAt     time.Time `json:"added_at"`
}

// ConfiguredTable is a member's table in a collaboration, with what the
// others may do with it.
type ConfiguredTable struct {
	// Name is how queries of the collaboration name the table.
	Name string `json:"name"`
	// Owner is the member that configured it; the engine reads the table
	// with its rights.
	Owner     string            `json:"owner"`
	OwnerID   string            `json:"owner_id,omitempty"`
	Warehouse string            `json:"warehouse"`
	Namespace catalog.Namespace `json:"namespace"`
	Table     string            `json:"table"`
	// Columns are the columns aggregates may take (COUNT, SUM, AVG).
	Columns []string `json:"columns"`
	// JoinKeys are the columns joins may match on (equality only).
	JoinKeys []string `json:"join_keys"`
	// Dimensions are the columns a query may group by, output and filter
	// on (with literals).
	Dimensions []string `json:"dimensions"`
	// Identifier is the column whose distinct values the threshold counts
	// (a customer or user id).
	Identifier string `json:"identifier"`
	// AnalysisRule is the kind of analysis rule: RuleAggregation (""
	// in definitions stored before list and custom rules), RuleList or
	// RuleCustom.
	AnalysisRule string `json:"analysis_rule,omitempty"`
	// Rule is the aggregation rule's threshold and, under differential
	// privacy, the row bound and ranges (aggregation and custom rules).
	Rule    AggregationRule `json:"rule"`
	AddedAt time.Time       `json:"added_at"`
}

// Kinds of analysis rules (ConfiguredTable.AnalysisRule).
const (
	// RuleAggregation allows aggregate queries only, each output row
	// aggregating at least MinIdentifiers identifiers.
	RuleAggregation = "aggregation"
	// RuleList allows listing the Columns of rows that match, on the join
	// keys, rows of another member's table: no aggregates, no identifiers
	// or join keys output, no threshold.
	RuleList = "list"
	// RuleCustom allows only the collaboration's approved query templates
	// to read the table.
	RuleCustom = "custom"
)

// Kind is the table's analysis rule (RuleAggregation when unset).
func (t ConfiguredTable) Kind() string {
	if t.AnalysisRule == "" {
		return RuleAggregation
	}
	return t.AnalysisRule
}

// AggregationRule is the aggregation analysis rule: only aggregate
// queries, and every output row aggregates at least MinIdentifiers
// distinct values of the identifier column (rows below are suppressed).
type AggregationRule struct {
	MinIdentifiers int `json:"min_identifiers"`
	// MaxContributions is, under differential privacy, how many rows one
	// identifier may contribute: the engine keeps at most this many rows
	// of each identifier (an arbitrary choice of them) before the query
	// runs. 0 means 1.
	MaxContributions int `json:"max_contributions,omitempty"`
	// Ranges clamp, under differential privacy, the values of the columns
	// SUM and AVG take: a column without a range cannot be summed or
	// averaged when the collaboration's privacy is on.
	Ranges map[string]Range `json:"ranges,omitempty"`
}

// Range is a closed interval [Lo, Hi] values are clamped to.
type Range struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Bound is the rule's per-identifier row bound (at least 1).
func (r AggregationRule) Bound() int {
	return max(r.MaxContributions, 1)
}

// Ident is the configured table's catalog identifier.
func (t ConfiguredTable) Ident() catalog.Ident {
	return catalog.Ident{Namespace: t.Namespace, Name: t.Table}
}

// Allowed reports whether col may appear in a query at all.
func (t ConfiguredTable) Allowed(col string) bool {
	return slices.Contains(t.Columns, col) || slices.Contains(t.JoinKeys, col) ||
		slices.Contains(t.Dimensions, col) || col == t.Identifier
}

// AllColumns are the columns a query may name, in a stable order: the
// identifier (when set), then the join keys, dimensions and columns, without
// duplicates.
func (t ConfiguredTable) AllColumns() []string {
	var out []string
	if t.Identifier != "" {
		out = append(out, t.Identifier)
	}
	for _, list := range [][]string{t.JoinKeys, t.Dimensions, t.Columns} {
		for _, c := range list {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// Member returns the member named principal.
func (c *Collaboration) Member(principal string) (Member, bool) {
	for _, m := range c.Members {
		if m.Principal == principal {
			return m, true
		}
	}
	return Member{}, false
}

// IsMember reports whether the principal (name and id) is a member.
func (c *Collaboration) IsMember(principal, id string) bool {
	m, ok := c.Member(principal)
	return ok && (m.PrincipalID == "" || id == "" || m.PrincipalID == id)
}

// Receives reports whether the member may run queries and receive
// results.
func (c *Collaboration) Receives(principal string) bool {
	return len(c.ResultReceivers) == 0 || slices.Contains(c.ResultReceivers, principal)
}

// Table returns the configured table named name.
func (c *Collaboration) Table(name string) (ConfiguredTable, bool) {
	for _, t := range c.Tables {
		if t.Name == name {
			return t, true
		}
	}
	return ConfiguredTable{}, false
}

var nameRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// ValidName checks a collaboration's or configured table's name.
func ValidName(what, name string) error {
	if !nameRe.MatchString(name) {
		return invalid("%s name %q: use 1 to 63 lower-case letters, digits and underscores, starting with a letter", what, name)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return floe.E(floe.Invalid, "collaboration", format, args...)
}

// Validate checks a collaboration's definition and its bounds.
func (c *Collaboration) Validate() error {
	if err := ValidName("collaboration", c.Name); err != nil {
		return err
	}
	if utf8.RuneCountInString(c.Description) > MaxTextLen {
		return invalid("description longer than %d characters", MaxTextLen)
	}
	if len(c.Members) > MaxMembers {
		return floe.E(floe.Unprocessable, "collaboration", "limit reached: at most %d members per collaboration", MaxMembers)
	}
	if len(c.Tables) > MaxTables {
		return floe.E(floe.Unprocessable, "collaboration", "limit reached: at most %d configured tables per collaboration", MaxTables)
	}
	seen := map[string]bool{}
	for _, m := range c.Members {
		if m.Principal == "" || seen[m.Principal] {
			return invalid("member %q is empty or listed twice", m.Principal)
		}
		seen[m.Principal] = true
	}
	for _, r := range c.ResultReceivers {
		if !seen[r] {
			return invalid("result receiver %q is not a member", r)
		}
	}
	names := map[string]bool{}
	for _, t := range c.Tables {
		if names[t.Name] {
			return invalid("configured table %q is listed twice", t.Name)
		}
		names[t.Name] = true
		if !seen[t.Owner] {
			return invalid("configured table %q: its owner %q is not a member", t.Name, t.Owner)
		}
		if err := t.Validate(); err != nil {
			return err
		}
	}
	if c.Privacy != nil {
		if err := c.Privacy.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a configured table's definition (not that its columns
// exist: the service checks that against the table).
func (t *ConfiguredTable) Validate() error {
	if err := ValidName("configured table", t.Name); err != nil {
		return err
	}
	if t.Warehouse == "" || t.Table == "" || len(t.Namespace) == 0 {
		return invalid("configured table %q: give the table as warehouse, namespace and name", t.Name)
	}
	if err := t.Ident().Validate(); err != nil {
		return invalid("configured table %q: %v", t.Name, err)
	}
	switch t.Kind() {
	case RuleAggregation:
		if t.Identifier == "" {
			return invalid("configured table %q: the identifier column is required (the threshold counts its distinct values)", t.Name)
		}
		if t.Rule.MinIdentifiers < 2 || t.Rule.MinIdentifiers > MaxMinIdentifiers {
			return invalid("configured table %q: min_identifiers must be between 2 and %d", t.Name, MaxMinIdentifiers)
		}
	case RuleList:
		if t.Rule.MinIdentifiers != 0 || t.Rule.MaxContributions != 0 || len(t.Rule.Ranges) != 0 {
			return invalid("configured table %q: the list rule takes no threshold, row bound or ranges (it lists matching rows by design)", t.Name)
		}
		if len(t.Dimensions) != 0 {
			return invalid("configured table %q: the list rule takes no dimensions: its list columns are its columns", t.Name)
		}
		if len(t.Columns) == 0 || len(t.JoinKeys) == 0 {
			return invalid("configured table %q: the list rule needs join keys and at least one list column", t.Name)
		}
		for _, c := range t.Columns {
			if slices.Contains(t.JoinKeys, c) {
				return invalid("configured table %q: join key %q cannot be a list column (raw identifiers are never listed)", t.Name, c)
			}
		}
	case RuleCustom:
		if t.Rule.MinIdentifiers != 0 && (t.Rule.MinIdentifiers < 2 || t.Rule.MinIdentifiers > MaxMinIdentifiers) {
			return invalid("configured table %q: min_identifiers must be 0 (none) or between 2 and %d", t.Name, MaxMinIdentifiers)
		}
	default:
		return invalid("configured table %q: analysis rule %q: use %q, %q or %q", t.Name, t.AnalysisRule, RuleAggregation, RuleList, RuleCustom)
	}
	for _, l := range []struct {
		what string
		cols []string
	}{{"columns", t.Columns}, {"join_keys", t.JoinKeys}, {"dimensions", t.Dimensions}} {
		if len(l.cols) > MaxColumns {
			return floe.E(floe.Unprocessable, "collaboration", "configured table %q: at most %d %s", t.Name, MaxColumns, l.what)
		}
		seen := map[string]bool{}
		for _, c := range l.cols {
			if c == "" || seen[c] {
				return invalid("configured table %q: %s: column %q is empty or listed twice", t.Name, l.what, c)
			}
			seen[c] = true
		}
	}
	if t.Identifier != "" && slices.Contains(t.Dimensions, t.Identifier) {
		return invalid("configured table %q: the identifier %q cannot be a dimension (it would be output row by row)", t.Name, t.Identifier)
	}
	if t.Identifier != "" && slices.Contains(t.Columns, t.Identifier) {
		if t.Kind() == RuleList {
			return invalid("configured table %q: the identifier %q cannot be a list column (raw identifiers are never listed)", t.Name, t.Identifier)
		}
		return invalid("configured table %q: the identifier %q cannot be summed or averaged; COUNT(DISTINCT) takes it without listing it in columns", t.Name, t.Identifier)
	}
	for _, k := range t.JoinKeys {
		if slices.Contains(t.Dimensions, k) {
			return invalid("configured table %q: join key %q cannot be a dimension (it would be output row by row)", t.Name, k)
		}
	}
	if t.Rule.MaxContributions < 0 || t.Rule.MaxContributions > MaxContributions {
		return invalid("configured table %q: max_contributions must be between 1 and %d", t.Name, MaxContributions)
	}
	if len(t.Rule.Ranges) > MaxColumns {
		return floe.E(floe.Unprocessable, "collaboration", "configured table %q: at most %d ranges", t.Name, MaxColumns)
	}
	for c, r := range t.Rule.Ranges {
		if !slices.Contains(t.Columns, c) || slices.Contains(t.JoinKeys, c) || slices.Contains(t.Dimensions, c) {
			return invalid("configured table %q: range of %q: ranges are for aggregatable columns that are neither join keys nor dimensions", t.Name, c)
		}
		if math.IsNaN(r.Lo) || math.IsNaN(r.Hi) || math.IsInf(r.Lo, 0) || math.IsInf(r.Hi, 0) || r.Lo > r.Hi || math.Abs(r.Lo) > 1e15 || math.Abs(r.Hi) > 1e15 {
			return invalid("configured table %q: range of %q must be finite with lo <= hi (at most 1e15 in magnitude)", t.Name, c)
		}
	}
	return nil
}

// String renders the configured table's source as warehouse.namespace.table.
func (t ConfiguredTable) String() string {
	return fmt.Sprintf("%s.%s.%s", t.Warehouse, strings.Join(t.Namespace, "."), t.Table)
}

// QueryRecord is one entry of a collaboration's query log, readable by
// every member.
type QueryRecord struct {
	ID            string    `json:"id"`
	Collaboration string    `json:"collaboration"`
	At            time.Time `json:"at"`
	// Member is the principal that ran the query.
	Member string `json:"member"`
	SQL    string `json:"sql"`
	// Outcome is "success", "denied" (a rule refused it) or "failure".
	Outcome string `json:"outcome"`
	// Error is the public error (SQLSTATE and message) of a query that did
	// not succeed.
	Error string `json:"error,omitempty"`
	// Rows is how many rows the member received.
	Rows int64 `json:"rows"`
	// Suppressed is how many output rows the threshold withheld.
	Suppressed int64 `json:"suppressed"`
	// Epsilon is the privacy budget the query was charged (0: none).
	Epsilon float64 `json:"epsilon,omitempty"`
	// BudgetRemaining is the budget left after the charge, or when the
	// query was refused for want of budget.
	BudgetRemaining *float64 `json:"budget_remaining,omitempty"`
}
