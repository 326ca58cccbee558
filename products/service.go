package products

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/maint"
)

// Audit actions of data products (docs/products.md lists them). The
// management API records publish, drop and checks on demand; the service
// records the scheduled checks.
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
// of sub (its grants, row filters and masks), read-only, and returns at
// most maxRows rows, each row's values as text (NULL as nil), and whether
// there were more.
type Querier interface {
	QueryAs(ctx context.Context, sub authz.Subject, sql string, maxRows int) (rows [][]*string, more bool, err error)
}

// Authz decides privileges, and keeps the tags and grants a product puts
// on its outputs (*authz.Authorizer). Check's errors name the privilege
// missing.
type Authz interface {
	Check(ctx context.Context, sub authz.Subject, priv authz.Privilege, s authz.Securable) error
	SetTags(ctx context.Context, t authz.TagTarget, tags map[string]string) error
	DeleteTags(ctx context.Context, t authz.TagTarget, keys ...string) error
	Grant(ctx context.Context, g authz.Grant) (authz.Grant, error)
	Revoke(ctx context.Context, g authz.Grant) error
	ListGrants(ctx context.Context, keep func(*authz.Grant) bool) ([]authz.Grant, error)
}

// Annotation is the business context a product writes into an output:
// properties to set and to remove, and docs of top-level columns by name.
type Annotation struct {
	Set    map[string]string
	Remove []string
	Docs   map[string]string
}

// Outputs is what the service needs of the catalog's tables and views.
type Outputs interface {
	// Columns returns the output's top-level column names, or
	// floe.NotFound when it does not exist.
	Columns(ctx context.Context, warehouse string, port Port) ([]string, error)
	// CommittedAt is when the output's current snapshot was committed
	// (zero when it has none; a view's last version).
	CommittedAt(ctx context.Context, warehouse string, port Port) (time.Time, error)
	// Annotate writes a into the output's properties and column docs.
	Annotate(ctx context.Context, warehouse string, port Port, a Annotation) error
	// AnnotateNamespace sets and removes properties of a namespace.
	AnnotateNamespace(ctx context.Context, warehouse string, ns catalog.Namespace, set map[string]string, remove []string) error
}

// Options configure a Service.
type Options struct {
	Store   Store
	Querier Querier
	Outputs Outputs
	Authz   Authz
	// Subject resolves a principal's name to the subject whose rights
	// scheduled checks use (the product's publisher).
	Subject func(ctx context.Context, name string) (authz.Subject, error)
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
	Subject    authz.Subject
	RequestID  string
	ClientAddr string
}

// Securable is the authorization object of a port.
func (p *Product) Securable(port Port) authz.Securable {
	if port.Kind == PortView {
		return authz.View(p.Warehouse, port.Ident())
	}
	return authz.Table(p.Warehouse, port.Ident())
}

// Publish validates p and stores it as the product's next version
// (version 1 when it is new), then writes its context into its outputs.
// prev is the version the caller read (0 for a new product): a concurrent
// publish makes it a floe.Conflict. The caller needs ALTER on every
// output; every output and every documented column must exist. Nothing is
// written when any of that fails.
func (s *Service) Publish(ctx context.Context, by Actor, p Product, prev int) (Product, error) {
	return s.publish(ctx, by, p, prev)
}

func (s *Service) publish(ctx context.Context, by Actor, p Product, prev int) (Product, error) {
	if err := p.Validate(); err != nil {
		return p, err
	}
	if prev < 0 {
		return p, invalid("previous version %d is negative", prev)
	}
	for _, o := range p.Outputs {
		if err := s.o.Authz.Check(ctx, by.Subject, authz.Alter, p.Securable(o)); err != nil {
			return p, fmt.Errorf("publish product %s: output %s: %w", p.Name, o.Name, err)
		}
		cols, err := s.o.Outputs.Columns(ctx, p.Warehouse, o)
		if err != nil {
			return p, fmt.Errorf("publish product %s: output %s: %w", p.Name, o.Name, err)
		}
		for c := range o.Columns {
			if !slices.Contains(cols, c) {
				return p, invalid("output %q (%s %s) has no column %q to document (columns: %s)", o.Name, o.Kind, o.Ident(), c, strings.Join(cols, ", "))
			}
		}
	}
	var old *Product
	if prev > 0 {
		cur, err := s.o.Store.ProductVersion(ctx, p.Warehouse, p.Name, 0)
		if err != nil {
			return p, err
		}
		if err := s.requireAlterAll(ctx, by.Subject, &cur); err != nil {
			return p, err
		}
		old = &cur
	}
	p.Version, p.UpdatedAt, p.UpdatedBy = prev+1, s.o.Now().UTC().Truncate(time.Millisecond), by.Subject.Principal
	if err := s.o.Store.PutProductVersion(ctx, p, s.o.KeepVersions, s.o.MaxProducts); err != nil {
		return p, fmt.Errorf("publish product %s: %w", p.Name, err)
	}
	var errs []error
	for _, o := range p.Outputs {
		if err := s.o.Outputs.Annotate(ctx, p.Warehouse, o, p.annotation(o)); err != nil {
			errs = append(errs, fmt.Errorf("output %s: %w", o.Name, err))
		}
		if err := s.o.Authz.SetTags(ctx, authz.TagTarget{On: p.Securable(o)}, map[string]string{TagKey(p.Name): TagValue}); err != nil {
			errs = append(errs, fmt.Errorf("output %s: tag: %w", o.Name, err))
		}
	}
	for _, ns := range p.namespaces() {
		set := map[string]string{NamespaceKey(p.Name): p.summary()}
		if err := s.o.Outputs.AnnotateNamespace(ctx, p.Warehouse, ns, set, nil); err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
		}
	}
	if old != nil {
		for _, o := range old.Outputs {
			if !sameOutput(p, o) {
				s.unannotate(ctx, old, o)
			}
		}
		s.unannotateNamespaces(ctx, old, &p)
	}
	if err := errors.Join(errs...); err != nil {
		return p, floe.Wrap(floe.Unavailable, err, "product %s version %d is published, but its context could not be written into every output (publish it again to retry): %v", p.Name, p.Version, err)
	}
	return p, nil
}

// sameOutput reports whether p still publishes o's table or view.
func sameOutput(p Product, o Port) bool {
	for _, q := range p.Outputs {
		if q.Kind == o.Kind && q.Table == o.Table && q.Namespace.String() == o.Namespace.String() {
			return true
		}
	}
	return false
}

// unannotate takes p's context and tag out of o, a former output.
func (s *Service) unannotate(ctx context.Context, p *Product, o Port) {
	a := Annotation{Remove: contextKeys}
	if err := s.o.Outputs.Annotate(ctx, p.Warehouse, o, a); err != nil && floe.KindOf(err) != floe.NotFound {
		s.o.Log.WarnContext(ctx, "products: could not remove a product's context from a former output", "product", p.Name, "output", o.Ident().String(), "err", err)
	}
	if err := s.o.Authz.DeleteTags(ctx, authz.TagTarget{On: p.Securable(o)}, TagKey(p.Name)); err != nil && floe.KindOf(err) != floe.NotFound {
		s.o.Log.WarnContext(ctx, "products: could not remove a product's tag from a former output", "product", p.Name, "output", o.Ident().String(), "err", err)
	}
}

// unannotateNamespaces removes old's discovery property from the
// namespaces next (nil: none) no longer publishes into.
func (s *Service) unannotateNamespaces(ctx context.Context, old, next *Product) {
	keep := map[string]bool{}
	if next != nil {
		for _, ns := range next.namespaces() {
			keep[ns.Key()] = true
		}
	}
	for _, ns := range old.namespaces() {
		if keep[ns.Key()] {
			continue
		}
		if err := s.o.Outputs.AnnotateNamespace(ctx, old.Warehouse, ns, nil, []string{NamespaceKey(old.Name)}); err != nil && floe.KindOf(err) != floe.NotFound {
			s.o.Log.WarnContext(ctx, "products: could not remove a product from a namespace's properties", "product", old.Name, "namespace", ns.String(), "err", err)
		}
	}
}

// TagValue is the value of a product's tag on its outputs.
const TagValue = "output"

// TagKey is the tag a product puts on each of its outputs (value
// TagValue); grants on the product are tag grants on it. Tag keys under
// "floe.product." are reserved to products.
func TagKey(product string) string { return TagPrefix + product }

// TagPrefix begins every product's tag key.
const TagPrefix = "floe.product."

// GrantExpr is the tag expression of the grants on a product: its outputs.
func GrantExpr(product string) string { return TagKey(product) + " = " + TagValue }

// NamespaceKey is the namespace property that makes a product
// discoverable through the REST catalog: set on every namespace holding
// one of its outputs, to the product's summary.
func NamespaceKey(product string) string { return "floe.products." + product }

// namespaces are the distinct namespaces of p's outputs, in order.
func (p *Product) namespaces() []catalog.Namespace {
	var out []catalog.Namespace
	seen := map[string]bool{}
	for _, o := range p.Outputs {
		if k := o.Namespace.Key(); !seen[k] {
			seen[k] = true
			out = append(out, o.Namespace)
		}
	}
	return out
}

// summary is what a namespace's discovery property says of p.
func (p *Product) summary() string {
	names := make([]string, len(p.Outputs))
	for i, o := range p.Outputs {
		names[i] = o.Namespace.String() + "." + o.Table
	}
	s := fmt.Sprintf("version %d, owner %s, outputs %s", p.Version, p.Owner, strings.Join(names, ", "))
	if p.Description != "" {
		s = p.Description + " (" + s + ")"
	}
	return s
}

// Properties a product writes into its outputs.
const (
	PropComment     = "comment"
	PropProduct     = "floe.product"
	PropVersion     = "floe.product.version"
	PropPort        = "floe.product.port"
	PropOwner       = "floe.product.owner"
	PropDomain      = "floe.product.domain"
	PropDescription = "floe.product.description"
	PropTerms       = "floe.product.terms"
)

// contextKeys are the properties a product owns on its outputs (comment
// is the output's own, and is left alone when the product goes).
var contextKeys = []string{PropProduct, PropVersion, PropPort, PropOwner, PropDomain, PropDescription, PropTerms}

// annotation is the context p writes into its output o.
func (p *Product) annotation(o Port) Annotation {
	set := map[string]string{PropProduct: p.Name, PropVersion: fmt.Sprint(p.Version), PropPort: o.Name, PropOwner: p.Owner}
	opt := map[string]string{PropDomain: p.Domain, PropDescription: p.Description, PropTerms: strings.Join(p.Terms, ", ")}
	var remove []string
	for k, v := range opt {
		if v == "" {
			remove = append(remove, k)
		} else {
			set[k] = v
		}
	}
	slices.Sort(remove)
	comment := o.Description
	if comment == "" {
		comment = p.Description
	}
	if comment != "" {
		set[PropComment] = comment
	}
	return Annotation{Set: set, Remove: remove, Docs: o.Columns}
}

// requireAlterAll checks ALTER on every output of p that still exists.
func (s *Service) requireAlterAll(ctx context.Context, sub authz.Subject, p *Product) error {
	for _, o := range p.Outputs {
		if err := s.o.Authz.Check(ctx, sub, authz.Alter, p.Securable(o)); err != nil {
			if _, cerr := s.o.Outputs.Columns(ctx, p.Warehouse, o); floe.KindOf(cerr) == floe.NotFound {
				continue
			}
			return fmt.Errorf("product %s: output %s: %w", p.Name, o.Name, err)
		}
	}
	return nil
}

// visible reports whether sub may see p: an administrator, or DESCRIBE on
// at least one of its outputs.
func (s *Service) visible(ctx context.Context, sub authz.Subject, p *Product) bool {
	if sub.Admin {
		return true
	}
	for _, o := range p.Outputs {
		if s.o.Authz.Check(ctx, sub, authz.Describe, p.Securable(o)) == nil {
			return true
		}
	}
	return false
}

// hidden is what a caller who may not see a product is told: the same as
// for a product that does not exist, so that names do not leak.
func hidden(warehouse, name string) error {
	return floe.E(floe.NotFound, "data product", "data product %q does not exist in warehouse %q, or you lack DESCRIBE on every one of its outputs", name, warehouse)
}

// Get returns version v of a product (0: the current one), if sub may see
// the current version.
func (s *Service) Get(ctx context.Context, sub authz.Subject, warehouse, name string, v int) (Product, error) {
	cur, err := s.o.Store.ProductVersion(ctx, warehouse, name, 0)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return Product{}, hidden(warehouse, name)
		}
		return Product{}, err
	}
	if !s.visible(ctx, sub, &cur) {
		return Product{}, hidden(warehouse, name)
	}
	if v == 0 || v == cur.Version {
		return cur, nil
	}
	return s.o.Store.ProductVersion(ctx, warehouse, name, v)
}

// List returns the current version of every product of a warehouse that
// sub may see.
func (s *Service) List(ctx context.Context, sub authz.Subject, warehouse string) ([]Product, error) {
	all, err := s.o.Store.Products(ctx, warehouse)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for i := range all {
		if s.visible(ctx, sub, &all[i]) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

// Versions lists a product's kept versions, newest first.
func (s *Service) Versions(ctx context.Context, sub authz.Subject, warehouse, name string) ([]Product, error) {
	if _, err := s.Get(ctx, sub, warehouse, name, 0); err != nil {
		return nil, err
	}
	return s.o.Store.ProductVersions(ctx, warehouse, name)
}

// Drop removes a product and its context from its outputs (the outputs
// stay: they are tables and views of their own). It needs ALTER on every
// output that still exists.
func (s *Service) Drop(ctx context.Context, by Actor, warehouse, name string) error {
	p, err := s.Get(ctx, by.Subject, warehouse, name, 0)
	if err != nil {
		return err
	}
	if err := s.requireAlterAll(ctx, by.Subject, &p); err != nil {
		return err
	}
	if err := s.o.Store.DropProduct(ctx, warehouse, name); err != nil {
		return err
	}
	for _, o := range p.Outputs {
		s.unannotate(ctx, &p, o)
	}
	s.unannotateNamespaces(ctx, &p, nil)
	grants, err := s.grants(ctx, warehouse, name)
	if err != nil {
		return err
	}
	for _, g := range grants {
		if err := s.o.Authz.Revoke(ctx, g); err != nil && floe.KindOf(err) != floe.NotFound {
			return fmt.Errorf("drop product %s: revoke %s: %w", name, g.ID, err)
		}
	}
	return nil
}

// Runs lists a product's newest check runs.
func (s *Service) Runs(ctx context.Context, sub authz.Subject, warehouse, name string, limit int) ([]CheckRun, error) {
	if _, err := s.Get(ctx, sub, warehouse, name, 0); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > s.o.KeepRuns {
		limit = s.o.KeepRuns
	}
	return s.o.Store.CheckRuns(ctx, warehouse, name, limit)
}

// Check evaluates every expectation of a product's current version with
// the rights of the caller (trigger "demand"), stores the run and audits
// it. A failed expectation is a result, not an error; the error is for a
// product the caller cannot see or a run that could not be stored.
func (s *Service) Check(ctx context.Context, by Actor, warehouse, name string) (CheckRun, error) {
	p, err := s.Get(ctx, by.Subject, warehouse, name, 0)
	if err != nil {
		return CheckRun{}, err
	}
	return s.check(ctx, by, by.Subject, &p, "demand")
}

// check evaluates p's expectations with the rights of as.
func (s *Service) check(ctx context.Context, by Actor, as authz.Subject, p *Product, trigger string) (CheckRun, error) {
	run := CheckRun{ID: newID(), Warehouse: p.Warehouse, Product: p.Name, Version: p.Version, At: s.o.Now().UTC(), By: as.Principal, Trigger: trigger, Status: StatusPass, Results: []Result{}}
	for _, e := range p.Expectations {
		r := s.evaluate(ctx, p, as, e)
		run.Results = append(run.Results, r)
		switch {
		case r.Status == StatusFail:
			run.Status = StatusFail
		case r.Status == StatusError && run.Status == StatusPass:
			run.Status = StatusError
		}
	}
	err := s.o.Store.AddCheckRun(ctx, run, s.o.KeepRuns)
	failed := []string{}
	for _, r := range run.Results {
		if r.Status != StatusPass {
			failed = append(failed, r.Expectation+":"+r.Status)
		}
	}
	if trigger == "schedule" { // the management API audits the checks it runs
		detail := map[string]any{"run_id": run.ID, "version": run.Version, "status": run.Status, "trigger": trigger, "expectations": len(run.Results), "not_passed": failed, "as": as.Principal}
		s.auditOutcome(ctx, by, ActionCheck, p.Warehouse, p.Name, checkOutcome(run, err), detail)
	}
	if err != nil {
		return CheckRun{}, fmt.Errorf("store check run of product %s: %w", p.Name, err)
	}
	return run, nil
}

func checkOutcome(run CheckRun, err error) string {
	if err != nil || run.Status != StatusPass {
		return audit.OutcomeFailure
	}
	return audit.OutcomeSuccess
}

func (s *Service) evaluate(ctx context.Context, p *Product, as authz.Subject, e Expectation) Result {
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
func (s *Service) measure(ctx context.Context, p *Product, as authz.Subject, e Expectation) (status, observed, detail string) {
	q, err := p.Query(e)
	if err != nil {
		return StatusError, "", err.Error()
	}
	if e.Kind == Freshness && q.SQL == "" {
		port, _ := p.Port(e.Port)
		at, err := s.o.Outputs.CommittedAt(ctx, p.Warehouse, port)
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

func (s *Service) auditOutcome(ctx context.Context, by Actor, action, warehouse, name, outcome string, detail map[string]any) {
	if s.o.Audit == nil {
		return
	}
	e := audit.Event{RequestID: by.RequestID, Principal: by.Subject.Principal, ClientAddr: by.ClientAddr, Action: action,
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

// Leases serialize scheduled checks across nodes (*sqlstore.Store).
type Leases = maint.Leases

// RunDue runs the scheduled checks that are due: those of every product
// with CheckEvery set whose newest run is at least CheckEvery old, each
// with the rights of the product's publisher, under a lease per product so
// that one node runs it. It returns how many it ran.
func (s *Service) RunDue(ctx context.Context, leases Leases, node string) (int, error) {
	all, err := s.o.Store.Products(ctx, "")
	if err != nil {
		return 0, err
	}
	ran := 0
	for i := range all {
		p := &all[i]
		if p.CheckEvery <= 0 || !s.due(ctx, p) {
			continue
		}
		ttl := s.o.CheckTimeout*time.Duration(len(p.Expectations)+1) + time.Minute
		l, ok, err := leases.AcquireLease(ctx, "product-check/"+p.Warehouse+"/"+p.Name, node, ttl)
		if err != nil {
			return ran, fmt.Errorf("scheduled check lease: %w", err)
		}
		if !ok {
			continue
		}
		if s.due(ctx, p) { // another node may have run it before we took the lease
			s.runScheduled(ctx, p)
			ran++
		}
		if err := leases.ReleaseLease(context.WithoutCancel(ctx), l); err != nil {
			s.o.Log.DebugContext(ctx, "products: scheduled check lease was lost", "product", p.Name, "err", err)
		}
	}
	return ran, nil
}

func (s *Service) due(ctx context.Context, p *Product) bool {
	runs, err := s.o.Store.CheckRuns(ctx, p.Warehouse, p.Name, 1)
	if err != nil {
		s.o.Log.WarnContext(ctx, "products: could not read the last check run", "product", p.Name, "err", err)
		return false
	}
	return len(runs) == 0 || s.o.Now().Sub(runs[0].At) >= time.Duration(p.CheckEvery)
}

// runScheduled checks p as its publisher; a publisher that can no longer
// be resolved (dropped, disabled) makes a run in error, so that the
// failure to check is as visible as a failed check.
func (s *Service) runScheduled(ctx context.Context, p *Product) {
	sys := Actor{Subject: authz.Subject{Principal: "floe:products"}}
	as, err := s.o.Subject(ctx, p.UpdatedBy)
	if err != nil {
		run := CheckRun{ID: newID(), Warehouse: p.Warehouse, Product: p.Name, Version: p.Version, At: s.o.Now().UTC(), By: p.UpdatedBy,
			Trigger: "schedule", Status: StatusError, Results: []Result{}}
		for _, e := range p.Expectations {
			run.Results = append(run.Results, Result{Expectation: e.Name, Kind: e.Kind, Port: e.Port, Status: StatusError,
				Detail: fmt.Sprintf("the product's publisher %q cannot run checks: %v (publish the product again as an active principal)", p.UpdatedBy, err)})
		}
		if err := s.o.Store.AddCheckRun(ctx, run, s.o.KeepRuns); err != nil {
			s.o.Log.WarnContext(ctx, "products: could not store a check run", "product", p.Name, "err", err)
		}
		s.auditOutcome(ctx, sys, ActionCheck, p.Warehouse, p.Name, audit.OutcomeFailure, map[string]any{"run_id": run.ID, "status": run.Status, "trigger": "schedule", "error": err.Error()})
		return
	}
	if _, err := s.check(ctx, sys, as, p, "schedule"); err != nil {
		s.o.Log.WarnContext(ctx, "products: scheduled check failed", "product", p.Name, "err", err)
	}
}

// Schedule runs RunDue every interval until ctx ends.
func (s *Service) Schedule(ctx context.Context, leases Leases, node string, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.RunDue(ctx, leases, node); err != nil && ctx.Err() == nil {
			s.o.Log.WarnContext(ctx, "products: scheduled checks failed; retrying next interval", "err", err)
		}
	}
}

// Grantable are the privileges a product may be granted with.
var Grantable = []authz.Privilege{authz.Describe, authz.Select}

// grants are the tag grants on product name.
func (s *Service) grants(ctx context.Context, warehouse, name string) ([]authz.Grant, error) {
	expr, err := authz.ParseExpr(GrantExpr(name))
	if err != nil {
		return nil, err
	}
	return s.o.Authz.ListGrants(ctx, func(g *authz.Grant) bool {
		return g.TagExpr == expr.String() && g.On.Warehouse == warehouse
	})
}

// requireManageGrants checks MANAGE_GRANTS on every output of p.
func (s *Service) requireManageGrants(ctx context.Context, sub authz.Subject, p *Product) error {
	for _, o := range p.Outputs {
		if err := s.o.Authz.Check(ctx, sub, authz.ManageGrants, p.Securable(o)); err != nil {
			return fmt.Errorf("product %s: output %s: %w", p.Name, o.Name, err)
		}
	}
	return nil
}

// Grant gives grantee a privilege (DESCRIBE or SELECT) on every output of
// a product, including outputs a later version adds, and none it removes:
// a tag grant on the product's tag (TagKey), which the product keeps on
// exactly its outputs. The caller needs MANAGE_GRANTS on every output.
func (s *Service) Grant(ctx context.Context, by Actor, warehouse, name string, grantee authz.Grantee, priv authz.Privilege) (authz.Grant, error) {
	p, err := s.Get(ctx, by.Subject, warehouse, name, 0)
	if err != nil {
		return authz.Grant{}, err
	}
	if !slices.Contains(Grantable, priv) {
		return authz.Grant{}, invalid("a data product is granted DESCRIBE or SELECT, not %s (grant other privileges on its outputs)", priv)
	}
	if err := s.requireManageGrants(ctx, by.Subject, &p); err != nil {
		return authz.Grant{}, err
	}
	return s.o.Authz.Grant(ctx, authz.Grant{Grantee: grantee, Privilege: priv, On: authz.Warehouse(warehouse),
		TagExpr: GrantExpr(name), CreatedBy: by.Subject.Principal})
}

// Revoke takes back a grant made with Grant.
func (s *Service) Revoke(ctx context.Context, by Actor, warehouse, name string, grantee authz.Grantee, priv authz.Privilege) error {
	p, err := s.Get(ctx, by.Subject, warehouse, name, 0)
	if err != nil {
		return err
	}
	if err := s.requireManageGrants(ctx, by.Subject, &p); err != nil {
		return err
	}
	return s.o.Authz.Revoke(ctx, authz.Grant{Grantee: grantee, Privilege: priv, On: authz.Warehouse(warehouse), TagExpr: GrantExpr(name)})
}

// Grants lists the grants on a product.
func (s *Service) Grants(ctx context.Context, sub authz.Subject, warehouse, name string) ([]authz.Grant, error) {
	if _, err := s.Get(ctx, sub, warehouse, name, 0); err != nil {
		return nil, err
	}
	return s.grants(ctx, warehouse, name)
}
