package products

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/catalog"
)

// Audit actions of the service (docs/products.md lists them).
const (
	ActionPublish = "product.publish"
	ActionDrop    = "product.drop"
	ActionCheck   = "product.check"
)

// Check statuses, of one expectation and of a whole run (a run fails when
// one expectation fails, and is an error when none fails but one could not
// be evaluated).
const (
	StatusPass  = "pass"
	StatusFail  = "fail"
	StatusError = "error"
)

// Result is the outcome of one expectation in a check run.
type Result struct {
	Expectation string          `json:"expectation"`
	Kind        ExpectationKind `json:"kind"`
	Port        string          `json:"port,omitempty"`
	Status      string          `json:"status"`
	// Observed is the value measured (a count, an age, the newest value).
	Observed string `json:"observed,omitempty"`
	// Detail says why it failed or could not be evaluated.
	Detail     string `json:"detail,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// CheckRun is one evaluation of a product version's expectations.
type CheckRun struct {
	ID        string    `json:"id"`
	Warehouse string    `json:"warehouse"`
	Product   string    `json:"product"`
	Version   int       `json:"version"`
	At        time.Time `json:"at"`
	// By is the principal whose rights evaluated it.
	By string `json:"by"`
	// Trigger is "demand" or "schedule".
	Trigger string   `json:"trigger"`
	Status  string   `json:"status"`
	Results []Result `json:"results"`
}

// Store keeps product versions and check runs (package sqlstore).
type Store interface {
	// PutProductVersion stores p as version p.Version of its product: 1
	// only when no version exists, otherwise exactly one above the current
	// one (else floe.Conflict), keeping at most keep versions. It refuses
	// a new product once the warehouse has max (floe.Unprocessable).
	PutProductVersion(ctx context.Context, p Product, keep, max int) error
	// ProductVersion returns version v of a product (0: the current one),
	// or floe.NotFound.
	ProductVersion(ctx context.Context, warehouse, name string, v int) (Product, error)
	// ProductVersions lists a product's kept versions, newest first.
	ProductVersions(ctx context.Context, warehouse, name string) ([]Product, error)
	// Products lists the current version of every product of a warehouse
	// ("" for every warehouse), by name.
	Products(ctx context.Context, warehouse string) ([]Product, error)
	// DropProduct removes a product with its versions and check runs.
	DropProduct(ctx context.Context, warehouse, name string) error
	// AddCheckRun stores a run, keeping the product's newest keep runs.
	AddCheckRun(ctx context.Context, r CheckRun, keep int) error
	// CheckRuns lists a product's newest runs, newest first, at most limit.
	CheckRuns(ctx context.Context, warehouse, name string, limit int) ([]CheckRun, error)
}

// Querier runs one SQL statement through Floe's SQL engine with the rights
// of the principal named as (its grants, row filters and masks) and
// returns at most maxRows rows, each row's values as text (NULL as nil),
// and whether there were more.
type Querier interface {
	QueryAs(ctx context.Context, as, sql string, maxRows int) (rows [][]*string, more bool, err error)
}

// Tables is what the service needs of the catalog.
type Tables interface {
	// CommittedAt is when the table's current snapshot was committed
	// (zero when it has none).
	CommittedAt(ctx context.Context, warehouse string, id catalog.Ident) (time.Time, error)
}

// Options configure a Service.
type Options struct {
	Store   Store
	Querier Querier
	Tables  Tables
	Audit   *audit.Log
	Log     *slog.Logger
	Now     func() time.Time
	// MaxProducts bounds the products of one warehouse (default 1,000).
	MaxProducts int
	// KeepVersions is how many versions of a product are kept (default 100).
	KeepVersions int
	// KeepRuns is how many check runs of a product are kept (default 500).
	KeepRuns int
	// CheckTimeout bounds one expectation's evaluation (default 60 s).
	CheckTimeout time.Duration
}

// Service publishes products and checks their expectations.
type Service struct {
	o Options
}

// New returns a Service.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxProducts <= 0 {
		o.MaxProducts = 1000
	}
	if o.KeepVersions <= 0 {
		o.KeepVersions = 100
	}
	if o.KeepRuns <= 0 {
		o.KeepRuns = 500
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 60 * time.Second
	}
	return &Service{o: o}
}

// Actor is who calls the service.
type Actor struct {
	Principal  string
	RequestID  string
	ClientAddr string
}

// Publish validates p and stores it as the product's next version
// (version 1 when it is new). prev is the version the caller read (0 for
// a new product): a concurrent publish makes it a floe.Conflict.
func (s *Service) Publish(ctx context.Context, by Actor, p Product, prev int) (Product, error) {
	if err := p.Validate(); err != nil {
		return Product{}, err
	}
	p.Version, p.UpdatedAt, p.UpdatedBy = prev+1, s.o.Now().UTC().Truncate(time.Millisecond), by.Principal
	err := s.o.Store.PutProductVersion(ctx, p, s.o.KeepVersions, s.o.MaxProducts)
	s.audit(ctx, by, ActionPublish, p.Warehouse, p.Name, err, map[string]any{"version": p.Version, "outputs": len(p.Outputs)})
	if err != nil {
		return Product{}, fmt.Errorf("publish product %s: %w", p.Name, err)
	}
	return p, nil
}

// Get returns version v of a product (0: the current one).
func (s *Service) Get(ctx context.Context, warehouse, name string, v int) (Product, error) {
	return s.o.Store.ProductVersion(ctx, warehouse, name, v)
}

// List returns the current version of every product of a warehouse.
func (s *Service) List(ctx context.Context, warehouse string) ([]Product, error) {
	return s.o.Store.Products(ctx, warehouse)
}

// Versions lists a product's kept versions, newest first.
func (s *Service) Versions(ctx context.Context, warehouse, name string) ([]Product, error) {
	return s.o.Store.ProductVersions(ctx, warehouse, name)
}

// Drop removes a product (its outputs stay: they are the owner's tables).
func (s *Service) Drop(ctx context.Context, by Actor, warehouse, name string) error {
	err := s.o.Store.DropProduct(ctx, warehouse, name)
	s.audit(ctx, by, ActionDrop, warehouse, name, err, nil)
	return err
}

// Runs lists a product's newest check runs.
func (s *Service) Runs(ctx context.Context, warehouse, name string, limit int) ([]CheckRun, error) {
	if limit <= 0 || limit > s.o.KeepRuns {
		limit = s.o.KeepRuns
	}
	return s.o.Store.CheckRuns(ctx, warehouse, name, limit)
}

// Check evaluates every expectation of a product's current version with
// the rights of the principal as (trigger "demand" or "schedule"), stores
// the run and audits it. A failed expectation is a result, not an error;
// the error is for a product that does not exist or a run that could not
// be stored.
func (s *Service) Check(ctx context.Context, by Actor, as, warehouse, name, trigger string) (CheckRun, error) {
	p, err := s.o.Store.ProductVersion(ctx, warehouse, name, 0)
	if err != nil {
		return CheckRun{}, err
	}
	run := CheckRun{ID: newID(), Warehouse: warehouse, Product: name, Version: p.Version, At: s.o.Now().UTC(), By: as, Trigger: trigger, Status: StatusPass, Results: []Result{}}
	for _, e := range p.Expectations {
		r := s.evaluate(ctx, &p, as, e)
		run.Results = append(run.Results, r)
		switch {
		case r.Status == StatusFail:
			run.Status = StatusFail
		case r.Status == StatusError && run.Status == StatusPass:
			run.Status = StatusError
		}
	}
	err = s.o.Store.AddCheckRun(ctx, run, s.o.KeepRuns)
	failed := []string{}
	for _, r := range run.Results {
		if r.Status != StatusPass {
			failed = append(failed, r.Expectation+":"+r.Status)
		}
	}
	detail := map[string]any{"run_id": run.ID, "version": run.Version, "status": run.Status, "trigger": trigger, "expectations": len(run.Results), "not_passed": failed, "as": as}
	s.auditOutcome(ctx, by, ActionCheck, warehouse, name, checkOutcome(run, err), detail)
	if err != nil {
		return CheckRun{}, fmt.Errorf("store check run of product %s: %w", name, err)
	}
	return run, nil
}

func checkOutcome(run CheckRun, err error) string {
	if err != nil || run.Status != StatusPass {
		return audit.OutcomeFailure
	}
	return audit.OutcomeSuccess
}

func (s *Service) evaluate(ctx context.Context, p *Product, as string, e Expectation) Result {
	start := s.o.Now()
	r := Result{Expectation: e.Name, Kind: e.Kind, Port: e.Port}
	defer func() { r.DurationMS = s.o.Now().Sub(start).Milliseconds() }()
	ctx, cancel := context.WithTimeout(ctx, s.o.CheckTimeout)
	defer cancel()
	r.Status, r.Observed, r.Detail = s.measure(ctx, p, as, e)
	return r
}

// measure returns the status, the observed value and, unless it passed,
// why.
func (s *Service) measure(ctx context.Context, p *Product, as string, e Expectation) (status, observed, detail string) {
	q, err := p.Query(e)
	if err != nil {
		return StatusError, "", err.Error()
	}
	if e.Kind == Freshness && q.SQL == "" {
		port, _ := p.Port(e.Port)
		at, err := s.o.Tables.CommittedAt(ctx, p.Warehouse, port.Ident())
		if err != nil {
			return StatusError, "", err.Error()
		}
		if at.IsZero() {
			return StatusFail, "", "the output has no snapshot yet"
		}
		return freshness(s.o.Now().Sub(at), e.MaxAge, "last commit at "+at.UTC().Format(time.RFC3339))
	}
	maxRows := 1
	if q.Assertion {
		maxRows = 5
	}
	rows, more, err := s.o.Querier.QueryAs(ctx, as, q.SQL, maxRows)
	if err != nil {
		return StatusError, "", err.Error()
	}
	if q.Assertion {
		if len(rows) == 0 {
			return StatusPass, "0 rows", ""
		}
		n := fmt.Sprint(len(rows))
		if more {
			n = "more than " + n
		}
		return StatusFail, n + " rows", "the assertion returned rows, e.g. " + sample(rows)
	}
	if len(rows) != 1 || len(rows[0]) == 0 {
		return StatusError, "", fmt.Sprintf("the check query returned %d rows", len(rows))
	}
	v := rows[0][0]
	if e.Kind == Freshness {
		if v == nil {
			return StatusFail, "", fmt.Sprintf("column %s has no value", e.Column)
		}
		at, err := parseTime(*v)
		if err != nil {
			return StatusError, *v, fmt.Sprintf("column %s is not a date or timestamp: %v", e.Column, err)
		}
		return freshness(s.o.Now().Sub(at), e.MaxAge, "newest "+e.Column+" "+*v)
	}
	var n int64
	if v == nil {
		return StatusError, "", "the check query returned NULL"
	}
	if _, err := fmt.Sscan(*v, &n); err != nil {
		return StatusError, *v, "the check query did not return a count"
	}
	obs := fmt.Sprint(n)
	switch e.Kind {
	case RowCount:
		if e.Min != nil && n < *e.Min {
			return StatusFail, obs, fmt.Sprintf("%d rows, fewer than the minimum %d", n, *e.Min)
		}
		if e.Max != nil && n > *e.Max {
			return StatusFail, obs, fmt.Sprintf("%d rows, more than the maximum %d", n, *e.Max)
		}
		return StatusPass, obs, ""
	case NotNull:
		if n > 0 {
			return StatusFail, obs, fmt.Sprintf("%d rows have a NULL %s", n, e.Column)
		}
	case Unique:
		if n > 0 {
			return StatusFail, obs, fmt.Sprintf("%d values of %s occur more than once", n, e.Column)
		}
	case AcceptedValues:
		if n > 0 {
			return StatusFail, obs, fmt.Sprintf("%d rows have a %s outside the accepted values", n, e.Column)
		}
	}
	return StatusPass, obs, ""
}

func freshness(age time.Duration, max Duration, what string) (string, string, string) {
	age = age.Truncate(time.Second)
	obs := age.String()
	if age > time.Duration(max) {
		return StatusFail, obs, fmt.Sprintf("%s: %s old, more than the allowed %s", what, obs, time.Duration(max))
	}
	return StatusPass, obs, ""
}

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999-07", "2006-01-02 15:04:05.999999999", "2006-01-02"}

func parseTime(s string) (time.Time, error) {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("unrecognised time " + s)
}

func sample(rows [][]*string) string {
	r := rows[0]
	parts := make([]string, len(r))
	for i, v := range r {
		if v == nil {
			parts[i] = "NULL"
		} else {
			parts[i] = *v
		}
	}
	out := "(" + strings.Join(parts, ", ") + ")"
	if len(out) > 200 {
		out = out[:200] + "…"
	}
	return out
}

func (s *Service) audit(ctx context.Context, by Actor, action, warehouse, name string, err error, detail map[string]any) {
	outcome := audit.OutcomeSuccess
	if err != nil {
		outcome = audit.OutcomeFailure
		if detail == nil {
			detail = map[string]any{}
		}
		detail["error"] = err.Error()
	}
	s.auditOutcome(ctx, by, action, warehouse, name, outcome, detail)
}

func (s *Service) auditOutcome(ctx context.Context, by Actor, action, warehouse, name, outcome string, detail map[string]any) {
	if s.o.Audit == nil {
		return
	}
	e := audit.Event{RequestID: by.RequestID, Principal: by.Principal, ClientAddr: by.ClientAddr, Action: action,
		Resource: "product:" + warehouse + "." + name, Outcome: outcome, Detail: detail}
	if _, err := s.o.Audit.Append(ctx, e); err != nil {
		s.o.Log.ErrorContext(ctx, "products: audit append failed", "action", action, "product", name, "err", err)
	}
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// IsNotFound reports whether err says a product does not exist.
func IsNotFound(err error) bool { return floe.KindOf(err) == floe.NotFound }
