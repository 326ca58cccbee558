package app

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/floe-lake/floe/federation"
	"github.com/floe-lake/floe/internal/keywrap"
	"github.com/floe-lake/floe/store/sqlstore"
)

// foreignRefreshInterval bounds how long a foreign catalog created or
// dropped on another node takes to be served or to stop being served here.
const foreignRefreshInterval = 5 * time.Second

// foreignRegistry holds the foreign catalogs created at run time (package
// federation's Service), by warehouse name, reloaded from the store every
// foreignRefreshInterval and at once after a create or drop on this node.
// It is safe for concurrent use.
type foreignRegistry struct {
	a   *App
	svc *federation.Service
	// syncMu serialises reloads; mu guards byName.
	syncMu sync.Mutex
	mu     sync.RWMutex
	byName map[string]*runtimeForeign
	stop   func()
}

// runtimeForeign is one served catalog created at run time.
type runtimeForeign struct {
	id string
	fc *foreignCatalog
}

// initRuntimeForeign makes the federation service, loads the catalogs
// created at run time and keeps them current until Close.
func (a *App) initRuntimeForeign(ctx context.Context) {
	getenv := a.cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	r := &foreignRegistry{a: a, byName: map[string]*runtimeForeign{}}
	r.svc = federation.NewService(federation.ServiceOptions{Store: a.store, Sealer: a.sealer,
		Configured: a.cfg.FederatedCatalogs, Reserved: []string{a.cfg.Warehouse}, Getenv: getenv,
		Changed: r.sync, Logger: a.log})
	a.runtimeForeign = r
	r.sync(ctx)
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(foreignRefreshInterval)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				r.sync(rctx)
			}
		}
	}()
	r.stop = func() {
		cancel()
		<-done
		r.mu.Lock()
		defer r.mu.Unlock()
		for name, f := range r.byName {
			f.fc.close()
			delete(r.byName, name)
		}
	}
}

// lookup returns the catalog created at run time served as name, or nil.
func (r *foreignRegistry) lookup(name string) *foreignCatalog {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if f, ok := r.byName[name]; ok {
		return f.fc
	}
	return nil
}

// sync reloads the catalogs from the store: new ones get a client, dropped
// ones stop being served and their client is closed. A catalog that cannot
// be loaded (its secret does not open here, its variable is unset) is not
// served, and logged; a failed read of the store keeps what is served.
func (r *foreignRegistry) sync(ctx context.Context) {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	loaded, err := r.svc.Load(ctx)
	if err != nil {
		r.a.log.ErrorContext(ctx, "federation: load the foreign catalogs created at run time", "err", err)
		if loaded == nil {
			return
		}
	}
	r.mu.RLock()
	old := r.byName
	r.mu.RUnlock()
	next := make(map[string]*runtimeForeign, len(loaded))
	for _, l := range loaded {
		if f, ok := old[l.Catalog.Name]; ok && f.id == l.ID {
			next[l.Catalog.Name] = f
			continue
		}
		fc, err := r.a.newForeignCatalog(l.Catalog)
		if err != nil {
			r.a.log.ErrorContext(ctx, "federation: foreign catalog not served", "name", l.Catalog.Name, "err", err)
			continue
		}
		next[l.Catalog.Name] = &runtimeForeign{id: l.ID, fc: fc}
		r.a.log.InfoContext(ctx, "federated catalog (created at run time)", "name", l.Catalog.Name, "uri", l.Catalog.URI,
			"warehouse", l.Catalog.Warehouse, "auth", l.Catalog.Auth, "writes", l.Catalog.Writes)
	}
	r.mu.Lock()
	r.byName = next
	r.mu.Unlock()
	for name, f := range old {
		if n, ok := next[name]; !ok || n != f {
			f.fc.close()
			r.a.log.InfoContext(ctx, "federated catalog no longer served", "name", name)
		}
	}
}

// Federation returns the service managing the foreign catalogs created at
// run time.
func (a *App) Federation() *federation.Service { return a.runtimeForeign.svc }

// foreignSecretTable presents the sealed secrets of foreign catalogs to
// keywrap.RewrapAll.
type foreignSecretTable struct{ s *sqlstore.Store }

func (t foreignSecretTable) Records(ctx context.Context) ([]keywrap.Record, error) {
	rs, err := t.s.ListForeignCatalogs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]keywrap.Record, 0, len(rs))
	for _, r := range rs {
		if len(r.SealedSecret) > 0 {
			out = append(out, keywrap.Record{ID: r.ID, Blob: r.SealedSecret})
		}
	}
	return out, nil
}

func (t foreignSecretTable) Replace(ctx context.Context, id string, old, new []byte) (bool, error) {
	return t.s.ReplaceForeignCatalogSecret(ctx, id, old, new)
}

// foreignWriteSecretTable presents the sealed write secrets of foreign
// catalogs to keywrap.RewrapAll.
type foreignWriteSecretTable struct{ s *sqlstore.Store }

func (t foreignWriteSecretTable) Records(ctx context.Context) ([]keywrap.Record, error) {
	rs, err := t.s.ListForeignCatalogs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]keywrap.Record, 0, len(rs))
	for _, r := range rs {
		if len(r.SealedWriteSecret) > 0 {
			out = append(out, keywrap.Record{ID: r.ID, Blob: r.SealedWriteSecret})
		}
	}
	return out, nil
}

func (t foreignWriteSecretTable) Replace(ctx context.Context, id string, old, new []byte) (bool, error) {
	return t.s.ReplaceForeignCatalogWriteSecret(ctx, id, old, new)
}
