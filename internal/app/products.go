package app

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/products"
	"github.com/floe-lake/floe/sqlgw/engine"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// productOutputs is the products service's view of the catalog.
type productOutputs struct{ cat *catalog.Catalog }

func (o productOutputs) Columns(ctx context.Context, wh string, p products.Port) ([]string, error) {
	var sc *iceberg.Schema
	if p.Kind == products.PortView {
		v, err := o.cat.LoadView(ctx, wh, p.Ident())
		if err != nil {
			return nil, err
		}
		sc = v.Metadata.CurrentSchema()
	} else {
		t, err := o.cat.LoadTable(ctx, wh, p.Ident())
		if err != nil {
			return nil, err
		}
		sc = t.Metadata.CurrentSchema()
	}
	out := make([]string, 0, len(sc.Fields()))
	for _, f := range sc.Fields() {
		out = append(out, f.Name)
	}
	return out, nil
}

func (o productOutputs) CommittedAt(ctx context.Context, wh string, p products.Port) (time.Time, error) {
	if p.Kind == products.PortView {
		v, err := o.cat.LoadView(ctx, wh, p.Ident())
		if err != nil {
			return time.Time{}, err
		}
		return time.UnixMilli(v.Metadata.CurrentVersion().TimestampMS), nil
	}
	t, err := o.cat.LoadTable(ctx, wh, p.Ident())
	if err != nil {
		return time.Time{}, err
	}
	s := t.Metadata.CurrentSnapshot()
	if s == nil {
		return time.Time{}, nil
	}
	return time.UnixMilli(s.TimestampMs), nil
}

// Annotate writes a product's context into a table (properties and column
// docs, in one commit that requires the schema it read) or a view
// (properties: a view's column docs belong to its versions).
func (o productOutputs) Annotate(ctx context.Context, wh string, p products.Port, a products.Annotation) error {
	if p.Kind == products.PortView {
		v, err := o.cat.LoadView(ctx, wh, p.Ident())
		if err != nil {
			return err
		}
		set, remove := propertyChanges(v.Metadata.Properties(), a)
		var ups view.Updates
		if len(set) > 0 {
			ups = append(ups, view.NewSetPropertiesUpdate(set))
		}
		if len(remove) > 0 {
			ups = append(ups, view.NewRemovePropertiesUpdate(remove))
		}
		if len(ups) == 0 {
			return nil
		}
		_, err = o.cat.ReplaceView(ctx, wh, p.Ident(), catalog.ViewCommit{Requirements: view.Requirements{view.AssertViewUUID(v.Metadata.ViewUUID())}, Updates: ups})
		return err
	}
	t, err := o.cat.LoadTable(ctx, wh, p.Ident())
	if err != nil {
		return err
	}
	md := t.Metadata
	set, remove := propertyChanges(md.Properties(), a)
	var ups table.Updates
	reqs := table.Requirements{table.AssertTableUUID(md.TableUUID())}
	if sc, changed := documented(md, a.Docs); changed {
		ups = append(ups, table.NewAddSchemaUpdate(sc), table.NewSetCurrentSchemaUpdate(-1))
		reqs = append(reqs, table.AssertCurrentSchemaID(md.CurrentSchema().ID))
	}
	if len(set) > 0 {
		ups = append(ups, table.NewSetPropertiesUpdate(set))
	}
	if len(remove) > 0 {
		ups = append(ups, table.NewRemovePropertiesUpdate(remove))
	}
	if len(ups) == 0 {
		return nil
	}
	_, err = o.cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: p.Ident(), Requirements: reqs, Updates: ups})
	return err
}

// AnnotateNamespace sets and removes properties of a namespace (a
// product's discovery property), leaving the others alone.
func (o productOutputs) AnnotateNamespace(ctx context.Context, wh string, ns catalog.Namespace, set map[string]string, remove []string) error {
	if len(set) == 0 && len(remove) == 0 {
		return nil
	}
	_, err := o.cat.UpdateNamespaceProperties(ctx, wh, ns, remove, set)
	return err
}

// propertyChanges is what must change for props to carry a: the keys to
// set to a new value and the keys present to remove.
func propertyChanges(props map[string]string, a products.Annotation) (map[string]string, []string) {
	set := map[string]string{}
	for k, v := range a.Set {
		if cur, ok := props[k]; !ok || cur != v {
			set[k] = v
		}
	}
	var remove []string
	for _, k := range a.Remove {
		if _, ok := props[k]; ok {
			remove = append(remove, k)
		}
	}
	return set, remove
}

// documented returns the table's current schema with the docs of the named
// top-level columns replaced, as a new schema, and whether any changed.
func documented(md table.Metadata, docs map[string]string) (*iceberg.Schema, bool) {
	cur := md.CurrentSchema()
	fields := cur.Fields()
	changed := false
	for i, f := range fields {
		if d, ok := docs[f.Name]; ok && f.Doc != d {
			fields[i].Doc, changed = d, true
		}
	}
	if !changed {
		return nil, false
	}
	next := 0
	for _, s := range md.Schemas() {
		next = max(next, s.ID+1)
	}
	return iceberg.NewSchemaWithIdentifiers(next, cur.IdentifierFieldIDs, fields...), true
}

// productQuerier runs the products service's check queries on the SQL
// engine, read-only, with a subject's rights.
type productQuerier struct{ a *App }

func (q productQuerier) QueryAs(ctx context.Context, sub authz.Subject, sql string, maxRows int) ([][]*string, bool, error) {
	a := q.a
	if a.sql == nil {
		return nil, false, floe.E(floe.Unsupported, "query", "the SQL engine is off on this server (sql_listen is off): product checks need it")
	}
	id := pgwire.Identity{Principal: sub.Principal, Method: "product-check",
		Payload: engine.Caller{Subject: sub, Unrestricted: sub.Admin, ReadOnly: true}}
	eng := a.sql.engine
	sess := pgwire.NewSession(id, a.cfg.Warehouse, nil)
	if err := eng.StartSession(ctx, sess); err != nil {
		return nil, false, err
	}
	defer eng.EndSession(sess)
	ctx, stop := context.WithTimeoutCause(ctx, a.cfg.SQLMaxStatementTimeout, errQueryTimeout)
	defer stop()
	st, err := eng.Prepare(ctx, sess, sql, nil)
	if err != nil {
		return nil, false, timeoutError(ctx, err)
	}
	defer func() { _ = st.Close() }()
	res, err := st.Execute(ctx, nil)
	if err != nil {
		return nil, false, timeoutError(ctx, err)
	}
	defer func() { _ = res.Close() }()
	var rows [][]*string
	for {
		row, err := res.Next()
		if err == io.EOF {
			return rows, false, nil
		}
		if err != nil {
			return rows, false, timeoutError(ctx, err)
		}
		if len(rows) == maxRows {
			return rows, true, nil
		}
		out := make([]*string, len(row))
		for i, v := range row {
			if v != nil {
				s := textValue(v)
				out[i] = &s
			}
		}
		rows = append(rows, out)
	}
}

// textValue renders an engine value as text, timestamps in RFC 3339.
func textValue(v any) string {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

// productSubject resolves a publisher's name to the subject scheduled
// checks run as: an enabled principal of the store.
func (a *App) productSubject(ctx context.Context, name string) (authz.Subject, error) {
	p, err := a.store.PrincipalByName(ctx, name)
	if err != nil {
		return authz.Subject{}, err
	}
	if p.Disabled {
		return authz.Subject{}, floe.E(floe.Forbidden, "principal", "principal %q is disabled", name)
	}
	return authz.Subject{PrincipalID: p.ID, Principal: p.Name, Admin: p.Admin}, nil
}

// newProducts builds the data products service.
func (a *App) newProducts() *products.Service {
	return products.New(products.Options{
		Store: a.store, Querier: productQuerier{a}, Outputs: productOutputs{a.cat}, Authz: a.authz,
		Subject: a.productSubject, Audit: a.audit, Log: a.log,
	})
}

// startProductChecks runs the scheduled checks of data products every
// products_check_interval on whichever node holds each product's lease;
// stopProductChecks stops them and waits.
func (a *App) startProductChecks() {
	if a.cfg.ProductsCheckInterval <= 0 || a.products == nil {
		return
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "floe"
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.stopProducts = func() { stop(); <-done }
	go func() {
		defer close(done)
		a.products.Schedule(ctx, a.store, fmt.Sprintf("%s-%08x", host, rand.Uint32()), a.cfg.ProductsCheckInterval)
	}()
}

func (a *App) stopProductChecks() {
	if a.stopProducts != nil {
		a.stopProducts()
		a.stopProducts = nil
	}
}

// Products is the data products service.
func (a *App) Products() *products.Service { return a.products }

// productMetrics answers the SQL endpoint's floe_metric calls: the SQL of
// a product's metric, for a caller who may see the product (as GET
// /api/v1/products/{name}/metrics/{metric} answers it).
type productMetrics struct{ a *App }

func (m productMetrics) MetricSQL(ctx context.Context, c engine.Caller, req engine.MetricRequest) (string, error) {
	if m.a.products == nil {
		return "", floe.E(floe.Unsupported, "data product", "data products are not available on this server")
	}
	sub := c.Subject
	if c.Unrestricted {
		sub.Admin = true // authorization is off: every product is visible
	}
	p, err := m.a.products.Get(ctx, sub, req.Warehouse, req.Product, 0)
	if err != nil {
		return "", err
	}
	return p.MetricSQL(products.MetricRequest{Metric: req.Metric, Grain: req.Grain, Dimensions: req.Dimensions})
}
