package app

import (
	"context"
	"fmt"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/federation/remote"
	"github.com/floe-lake/floe/restcat"
)

// initForeign makes the clients of the configured foreign catalogs
// (cfg.FederatedCatalogs); nothing is contacted until a request needs it.
func (a *App) initForeign() error {
	a.foreign = map[string]*foreignCatalog{}
	for _, c := range a.cfg.FederatedCatalogs {
		cl, err := remote.New(remote.Options{Name: c.Name, URI: c.URI, Warehouse: c.Warehouse, CacheTTL: c.CacheTTL,
			Auth: remote.Auth{Kind: c.Auth, Token: c.Token, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
				Scope: c.Scope, TokenURL: c.TokenURL,
				Region: c.Region, SigningName: c.SigningName, RoleARN: c.RoleARN, ExternalID: c.ExternalID},
			Audit: a.auditRemote})
		if err != nil {
			return fmt.Errorf("federated catalog %s: %w", c.Name, err)
		}
		a.foreign[c.Name] = &foreignCatalog{c: cl}
		a.log.Info("federated catalog", "name", c.Name, "uri", c.URI, "warehouse", c.Warehouse, "auth", c.Auth)
	}
	return nil
}

// foreignCatalogByName is restcat's Options.Foreign: the configured
// catalogs, then those created at run time. It is safe for concurrent use.
func (a *App) foreignCatalogByName(name string) restcat.Foreign {
	if f, ok := a.foreign[name]; ok {
		return f
	}
	if a.runtimeForeign != nil {
		if f := a.runtimeForeign.lookup(name); f != nil {
			return f
		}
	}
	return nil
}

// auditRemote records one call to a foreign catalog, with the Floe
// principal whose request made it.
func (a *App) auditRemote(ctx context.Context, c remote.Call) {
	e := audit.Event{Action: "federation.remote." + c.Operation, Resource: "catalog:" + c.Catalog,
		Outcome: audit.OutcomeSuccess, Detail: map[string]any{"method": c.Method, "path": c.Path, "status": c.Status,
			"latency_ms": float64(c.Latency.Microseconds()) / 1000}}
	if c.Err != "" {
		e.Outcome = audit.OutcomeError
		e.Detail["error"] = c.Err
	}
	if cl, ok := auth.ClaimsFrom(ctx); ok {
		e.Principal = cl.Principal
		e.Detail["token_id"] = cl.TokenID
	} else if rc, ok := ctx.Value(remoteCallerKey{}).(remoteCaller); ok {
		e.Principal = rc.principal
		if rc.tokenID != "" {
			e.Detail["token_id"] = rc.tokenID
		}
	}
	e.RequestID = restcat.RequestID(ctx)
	a.events.Record(ctx, e)
}

// foreignCatalog adapts a remote client to restcat.Foreign.
type foreignCatalog struct{ c *remote.Client }

func (f *foreignCatalog) ListNamespaces(ctx context.Context, parent []string) ([][]string, error) {
	return f.c.ListNamespaces(ctx, parent)
}

func (f *foreignCatalog) LoadNamespace(ctx context.Context, ns []string) (map[string]string, error) {
	return f.c.LoadNamespace(ctx, ns)
}

func (f *foreignCatalog) ListTables(ctx context.Context, ns []string) ([]catalog.Ident, error) {
	return idents(f.c.ListTables(ctx, ns))
}

func (f *foreignCatalog) ListViews(ctx context.Context, ns []string) ([]catalog.Ident, error) {
	return idents(f.c.ListViews(ctx, ns))
}

func idents(ids []remote.Ident, err error) ([]catalog.Ident, error) {
	if err != nil {
		return nil, err
	}
	out := make([]catalog.Ident, len(ids))
	for i, id := range ids {
		out[i] = catalog.Ident{Namespace: catalog.Namespace(id.Namespace), Name: id.Name}
	}
	return out, nil
}

func (f *foreignCatalog) LoadTable(ctx context.Context, ns []string, name string, withCredentials bool) (*restcat.ForeignTable, error) {
	t, err := f.c.LoadTable(ctx, ns, name, withCredentials)
	if err != nil {
		return nil, err
	}
	out := &restcat.ForeignTable{MetadataLocation: t.MetadataLocation, Metadata: t.Metadata, Config: t.Config}
	for _, sc := range t.StorageCredentials {
		out.StorageCredentials = append(out.StorageCredentials, restcat.ForeignCredential{Prefix: sc.Prefix, Config: sc.Config})
	}
	return out, nil
}

func (f *foreignCatalog) LoadView(ctx context.Context, ns []string, name string) (*restcat.ForeignView, error) {
	v, err := f.c.LoadView(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return &restcat.ForeignView{MetadataLocation: v.MetadataLocation, Metadata: v.Metadata, Config: v.Config}, nil
}
