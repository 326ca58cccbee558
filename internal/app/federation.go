package app

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/federation"
	"github.com/floe-lake/floe/federation/remote"
	"github.com/floe-lake/floe/restcat"
)

// initForeign makes the clients of the configured foreign catalogs
// (cfg.FederatedCatalogs); nothing is contacted until a request needs it.
func (a *App) initForeign() error {
	a.foreign = map[string]*foreignCatalog{}
	for _, c := range a.cfg.FederatedCatalogs {
		fc, err := a.newForeignCatalog(c)
		if err != nil {
			return err
		}
		a.foreign[c.Name] = fc
		a.log.Info("federated catalog", "name", c.Name, "uri", c.URI, "warehouse", c.Warehouse, "auth", c.Auth, "writes", c.Writes)
	}
	return nil
}

// newForeignCatalog makes the clients of a foreign catalog: the read
// identity's and, with writes on, the write identity's (a client of its
// own, with its own token and cache); nothing is contacted.
func (a *App) newForeignCatalog(c federation.Catalog) (*foreignCatalog, error) {
	opts := func(identity string, au remote.Auth) remote.Options {
		return remote.Options{Name: c.Name, URI: c.URI, Warehouse: c.Warehouse, CacheTTL: c.CacheTTL, Auth: au,
			Audit: a.auditRemote, Identity: identity}
	}
	read := remote.Auth{Kind: c.Auth, Token: c.Token, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		Scope: c.Scope, TokenURL: c.TokenURL,
		Region: c.Region, SigningName: c.SigningName, RoleARN: c.RoleARN, ExternalID: c.ExternalID}
	identity := ""
	if c.Writes {
		identity = "read"
	}
	cl, err := remote.New(opts(identity, read))
	if err != nil {
		return nil, fmt.Errorf("federated catalog %s: %w", c.Name, err)
	}
	fc := &foreignCatalog{c: cl}
	if c.Writes {
		wa := read
		wa.Token, wa.ClientID, wa.ClientSecret = c.WriteToken, c.WriteClientID, c.WriteClientSecret
		wa.RoleARN, wa.ExternalID = c.WriteRoleARN, c.WriteExternalID
		if fc.w, err = remote.New(opts("write", wa)); err != nil {
			cl.Close()
			return nil, fmt.Errorf("federated catalog %s (write identity): %w", c.Name, err)
		}
	}
	return fc, nil
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
	if c.Identity != "" {
		e.Detail["identity"] = c.Identity
	}
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

// foreignCatalog adapts a remote client to restcat.Foreign, and with a
// write client (writes on) to restcat.ForeignWriter.
type foreignCatalog struct {
	c *remote.Client
	w *remote.Client // the write identity's; nil: writes off
}

// close closes the clients.
func (f *foreignCatalog) close() {
	f.c.Close()
	if f.w != nil {
		f.w.Close()
	}
}

// Writable implements restcat.ForeignWriter.
func (f *foreignCatalog) Writable() bool { return f.w != nil }

// Write implements restcat.ForeignWriter: the write goes out with the write
// identity, and both identities' cached answers about what it touched are
// dropped whatever its outcome.
func (f *foreignCatalog) Write(ctx context.Context, w restcat.ForeignWrite) ([]byte, error) {
	if f.w == nil {
		return nil, floe.E(floe.Forbidden, "", "foreign catalog writes are off")
	}
	defer func() {
		for _, id := range w.Touched {
			f.c.Invalidate(id.Namespace, id.Name)
			f.w.Invalidate(id.Namespace, id.Name)
		}
	}()
	res, err := f.w.Write(ctx, remote.Write{Operation: w.Operation, Method: w.Method, Path: w.Path, Query: w.Query,
		Body: w.Body, Delegate: w.Delegate, Commit: w.Commit, Entity: w.Entity, Object: w.Object})
	if err != nil {
		return nil, err
	}
	return res.Body, nil
}

// LoadTableForWrite implements restcat.ForeignWriter.
func (f *foreignCatalog) LoadTableForWrite(ctx context.Context, ns []string, name string) (*restcat.ForeignTable, error) {
	if f.w == nil {
		return nil, floe.E(floe.Forbidden, "", "foreign catalog writes are off")
	}
	return foreignTable(f.w.LoadTable(ctx, ns, name, true))
}

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
	return foreignTable(f.c.LoadTable(ctx, ns, name, withCredentials))
}

func foreignTable(t *remote.LoadTableResult, err error) (*restcat.ForeignTable, error) {
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

var _ restcat.ForeignSigner = (*foreignCatalog)(nil)

// LoadTableSigning implements restcat.ForeignSigner with the read identity.
func (f *foreignCatalog) LoadTableSigning(ctx context.Context, ns []string, name string) (*restcat.ForeignTable, error) {
	return foreignTable(f.c.LoadTableSigning(ctx, ns, name))
}

// Sign implements restcat.ForeignSigner: the write identity signs writes
// (its own signer configuration, from its own load), the read identity
// everything else.
func (f *foreignCatalog) Sign(ctx context.Context, ns []string, name string, write bool, body []byte) (json.RawMessage, error) {
	cl := f.c
	if write {
		if f.w == nil {
			return nil, floe.E(floe.Forbidden, "", "foreign catalog writes are off")
		}
		cl = f.w
	}
	t, err := cl.LoadTableSigning(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return cl.Sign(ctx, t.Config, body)
}
