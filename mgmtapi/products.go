package mgmtapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/products"
)

// Products manages data products (*products.Service). Each method checks
// the caller's rights itself: ALTER on every output to publish or drop,
// DESCRIBE on one output to see a product.
type Products interface {
	Publish(ctx context.Context, by products.Actor, p products.Product, prev int) (products.Product, error)
	Get(ctx context.Context, sub authz.Subject, warehouse, name string, v int) (products.Product, error)
	List(ctx context.Context, sub authz.Subject, warehouse string) ([]products.Product, error)
	Versions(ctx context.Context, sub authz.Subject, warehouse, name string) ([]products.Product, error)
	Drop(ctx context.Context, by products.Actor, warehouse, name string) error
	Check(ctx context.Context, by products.Actor, warehouse, name string) (products.CheckRun, error)
	Runs(ctx context.Context, sub authz.Subject, warehouse, name string, limit int) ([]products.CheckRun, error)
	Grant(ctx context.Context, by products.Actor, warehouse, name string, grantee authz.Grantee, priv authz.Privilege) (authz.Grant, error)
	Revoke(ctx context.Context, by products.Actor, warehouse, name string, grantee authz.Grantee, priv authz.Privilege) error
	Grants(ctx context.Context, sub authz.Subject, warehouse, name string) ([]authz.Grant, error)
}

// Audit actions of grants on data products.
const (
	ActionProductGrant  = "product.grant"
	ActionProductRevoke = "product.revoke"
)

// ProductGrantRequest is the body of POST /products/{name}/grants and
// POST /products/{name}/grants/revoke.
type ProductGrantRequest struct {
	Grantee   *Grantee `json:"grantee"`
	Privilege string   `json:"privilege"`
}

// GrantList is the answer of GET /products/{name}/grants.
type GrantList struct {
	Grants []Grant `json:"grants"`
}

// ProductList is the answer of GET /products and GET /products/{name}/versions.
type ProductList struct {
	Products []products.Product `json:"products"`
}

// CheckRunList is the answer of GET /products/{name}/checks.
type CheckRunList struct {
	Runs []products.CheckRun `json:"runs"`
}

// MetricQuery is the answer of GET /products/{name}/metrics/{metric}: the
// SQL that computes the metric at the grain and by the dimensions asked,
// to run on the SQL endpoint or POST /query.
type MetricQuery struct {
	Product string `json:"product"`
	products.MetricRequest
	SQL string `json:"sql"`
}

// productRoutes are the data product operations.
func (h *Handler) productRoutes() []route {
	const p = "/api/v1/products"
	return []route{
		{"GET", p, "", h.withProducts(h.listProducts)},
		{"POST", p, products.ActionPublish, h.withProducts(h.createProduct)},
		{"GET", p + "/{name}", "", h.withProducts(h.getProduct)},
		{"PUT", p + "/{name}", products.ActionPublish, h.withProducts(h.updateProduct)},
		{"DELETE", p + "/{name}", products.ActionDrop, h.withProducts(h.dropProduct)},
		{"GET", p + "/{name}/versions", "", h.withProducts(h.productVersions)},
		{"POST", p + "/{name}/checks", products.ActionCheck, h.withProducts(h.checkProduct)},
		{"GET", p + "/{name}/checks", "", h.withProducts(h.productChecks)},
		{"GET", p + "/{name}/metrics/{metric}", "", h.withProducts(h.metricQuery)},
		{"GET", p + "/{name}/grants", "", h.withProducts(h.productGrants)},
		{"POST", p + "/{name}/grants", ActionProductGrant, h.withProducts(h.grantProduct)},
		{"POST", p + "/{name}/grants/revoke", ActionProductRevoke, h.withProducts(h.revokeProduct)},
	}
}

// withProducts adapts a products operation to a route: it answers
// Unsupported when the server has no products service.
func (h *Handler) withProducts(f func(c *call, s Products) error) func(c *call) error {
	return func(c *call) error {
		if h.opts.Products == nil {
			return floe.E(floe.Unsupported, "", "data products are not managed on this server")
		}
		return f(c, h.opts.Products)
	}
}

// productWarehouse is the ?warehouse= of a request, or the default one.
func (h *Handler) productWarehouse(c *call) string {
	if wh := c.r.URL.Query().Get("warehouse"); wh != "" {
		return wh
	}
	return h.opts.DefaultWarehouse
}

func (c *call) actor() products.Actor {
	return products.Actor{Subject: c.sub, RequestID: c.rid, ClientAddr: httperr.ClientAddr(c.r)}
}

func (h *Handler) listProducts(c *call, s Products) error {
	ps, err := s.List(c.ctx, c.sub, h.productWarehouse(c))
	if err != nil {
		return err
	}
	if ps == nil {
		ps = []products.Product{}
	}
	return reply(c, http.StatusOK, ProductList{Products: ps})
}

// publish decodes a definition and publishes it on top of version prev.
func (h *Handler) publish(c *call, s Products, name string, status int) error {
	var p products.Product
	if err := decode(c, &p); err != nil {
		return err
	}
	prev := p.Version
	if name != "" {
		if p.Name != "" && p.Name != name {
			return floe.E(floe.Invalid, "data product", "the body names product %q, the path %q", p.Name, name)
		}
		p.Name = name
		if prev <= 0 {
			return floe.E(floe.Invalid, "data product", "give the version you are replacing as \"version\" (GET the product to read it); create a product with POST /api/v1/products")
		}
	} else if prev != 0 {
		return floe.E(floe.Invalid, "data product", "a new product has no version: leave \"version\" out (replace an existing one with PUT /api/v1/products/%s)", p.Name)
	}
	if p.Warehouse == "" {
		p.Warehouse = h.opts.DefaultWarehouse
	}
	c.resource = "product:" + p.Warehouse + "." + p.Name
	c.note("product", p.Name, "warehouse", p.Warehouse, "version", prev+1, "outputs", len(p.Outputs))
	out, err := s.Publish(c.ctx, c.actor(), p, prev)
	if err != nil {
		return err
	}
	return reply(c, status, out)
}

func (h *Handler) createProduct(c *call, s Products) error {
	return h.publish(c, s, "", http.StatusCreated)
}

func (h *Handler) updateProduct(c *call, s Products) error {
	return h.publish(c, s, c.r.PathValue("name"), http.StatusOK)
}

func (h *Handler) getProduct(c *call, s Products) error {
	v := 0
	if q := c.r.URL.Query().Get("version"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 {
			return floe.E(floe.Invalid, "data product", "version %q is not a positive number", q)
		}
		v = n
	}
	p, err := s.Get(c.ctx, c.sub, h.productWarehouse(c), c.r.PathValue("name"), v)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, p)
}

func (h *Handler) dropProduct(c *call, s Products) error {
	wh, name := h.productWarehouse(c), c.r.PathValue("name")
	c.resource = "product:" + wh + "." + name
	c.note("product", name, "warehouse", wh)
	if err := s.Drop(c.ctx, c.actor(), wh, name); err != nil {
		return err
	}
	return noContent(c)
}

func (h *Handler) productVersions(c *call, s Products) error {
	ps, err := s.Versions(c.ctx, c.sub, h.productWarehouse(c), c.r.PathValue("name"))
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, ProductList{Products: ps})
}

func (h *Handler) checkProduct(c *call, s Products) error {
	wh, name := h.productWarehouse(c), c.r.PathValue("name")
	c.resource = "product:" + wh + "." + name
	c.note("product", name, "warehouse", wh, "trigger", "demand")
	run, err := s.Check(c.ctx, c.actor(), wh, name)
	if err != nil {
		return err
	}
	var notPassed []string
	for _, r := range run.Results {
		if r.Status != products.StatusPass {
			notPassed = append(notPassed, r.Expectation+":"+r.Status)
		}
	}
	c.note("run_id", run.ID, "version", run.Version, "status", run.Status, "expectations", len(run.Results), "not_passed", notPassed)
	if run.Status != products.StatusPass {
		c.outcome = audit.OutcomeFailure
	}
	return reply(c, http.StatusOK, run)
}

func (h *Handler) productChecks(c *call, s Products) error {
	limit := 20
	if q := c.r.URL.Query().Get("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 {
			return floe.E(floe.Invalid, "check runs", "limit %q is not a positive number", q)
		}
		limit = n
	}
	runs, err := s.Runs(c.ctx, c.sub, h.productWarehouse(c), c.r.PathValue("name"), limit)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, CheckRunList{Runs: runs})
}

func (h *Handler) metricQuery(c *call, s Products) error {
	p, err := s.Get(c.ctx, c.sub, h.productWarehouse(c), c.r.PathValue("name"), 0)
	if err != nil {
		return err
	}
	q := c.r.URL.Query()
	req := products.MetricRequest{Metric: c.r.PathValue("metric"), Grain: q.Get("grain")}
	for _, d := range q["dimension"] {
		for _, part := range strings.Split(d, ",") {
			if part = strings.TrimSpace(part); part != "" {
				req.Dimensions = append(req.Dimensions, part)
			}
		}
	}
	sql, err := p.MetricSQL(req)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, MetricQuery{Product: p.Name, MetricRequest: req, SQL: sql})
}

// productGrant decodes a product grant body.
func productGrant(c *call) (authz.Grantee, authz.Privilege, error) {
	var req ProductGrantRequest
	if err := decode(c, &req); err != nil {
		return authz.Grantee{}, 0, err
	}
	if req.Grantee == nil {
		return authz.Grantee{}, 0, missing("grantee")
	}
	if req.Privilege == "" {
		return authz.Grantee{}, 0, missing("privilege")
	}
	kind, err := authz.ParseGranteeKind(req.Grantee.Kind)
	if err != nil {
		return authz.Grantee{}, 0, err
	}
	priv, err := authz.ParsePrivilege(req.Privilege)
	if err != nil {
		return authz.Grantee{}, 0, err
	}
	g := authz.Grantee{Kind: kind, Name: req.Grantee.Name}
	c.note("grantee", g.String(), "privilege", priv.String())
	return g, priv, nil
}

func (h *Handler) grantProduct(c *call, s Products) error {
	wh, name := h.productWarehouse(c), c.r.PathValue("name")
	c.resource = "product:" + wh + "." + name
	c.note("product", name, "warehouse", wh)
	grantee, priv, err := productGrant(c)
	if err != nil {
		return err
	}
	g, err := s.Grant(c.ctx, c.actor(), wh, name, grantee, priv)
	if err != nil {
		return err
	}
	c.note("grant_id", g.ID, "tag_expression", g.TagExpr)
	return reply(c, http.StatusCreated, grantJSON(&g))
}

func (h *Handler) revokeProduct(c *call, s Products) error {
	wh, name := h.productWarehouse(c), c.r.PathValue("name")
	c.resource = "product:" + wh + "." + name
	c.note("product", name, "warehouse", wh)
	grantee, priv, err := productGrant(c)
	if err != nil {
		return err
	}
	if err := s.Revoke(c.ctx, c.actor(), wh, name, grantee, priv); err != nil {
		return err
	}
	return noContent(c)
}

func (h *Handler) productGrants(c *call, s Products) error {
	gs, err := s.Grants(c.ctx, c.sub, h.productWarehouse(c), c.r.PathValue("name"))
	if err != nil {
		return err
	}
	out := GrantList{Grants: []Grant{}}
	for i := range gs {
		out.Grants = append(out.Grants, grantJSON(&gs[i]))
	}
	return reply(c, http.StatusOK, out)
}
