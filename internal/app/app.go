// Package app wires Floe's packages into a running server. It is the only
// package besides cmd/floe that knows every other one.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/console"
	"github.com/floe-lake/floe/internal/keywrap"
	"github.com/floe-lake/floe/internal/metrics"
	"github.com/floe-lake/floe/internal/netlimit"
	"github.com/floe-lake/floe/internal/tracing"
	"github.com/floe-lake/floe/maint"
	"github.com/floe-lake/floe/oauth"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/objstore/s3api"
	"github.com/floe-lake/floe/objstore/sse"
	"github.com/floe-lake/floe/products"
	"github.com/floe-lake/floe/restcat"
	"github.com/floe-lake/floe/revoke"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/sharing/sharecat"
	"github.com/floe-lake/floe/sqlgw/rowfilter"
	"github.com/floe-lake/floe/sqlgw/viewrename"
	"github.com/floe-lake/floe/store/sqlstore"
	"github.com/floe-lake/floe/vend"
)

// App is a configured Floe node.
type App struct {
	cfg   Config
	log   *slog.Logger
	store *sqlstore.Store
	// warehouseIO writes the warehouse's objects (readiness probe).
	warehouseIO catalog.FileIO
	// health answers /healthz and /readyz (health.go).
	health  *health
	objects *bucket.Store // nil on external S3
	s3      *s3api.Server // nil unless the embedded endpoint runs
	minter  vend.Minter   // nil: no vending
	events  *audit.Async
	vend    *restcat.Vending // nil: no vending
	keyring sse.KeyWrapper   // wraps object data keys; nil when encryption is off
	// sealer seals the store's secrets; objectWrapper wraps the objects'
	// data keys (see keys.go).
	sealer        *keywrap.Sealer
	objectWrapper sse.KeyWrapper
	cat           *catalog.Catalog
	auth          *auth.Service
	audit         *audit.Log
	// auditTail holds the records this node last stored, for the export.
	auditTail *audit.Tail
	authz     *authz.Authorizer
	// rowFilters parses grants' row filters as they are made (one DuckDB
	// connection, opened at the first grant with a row filter).
	rowFilters *rowfilter.Parser
	// viewRenamer rewrites shared views for share catalogs (one DuckDB
	// connection, opened on first use).
	viewRenamer *viewrename.Rewriter
	// foreign are the federated catalogs by warehouse name (federation.go).
	foreign map[string]*foreignCatalog
	oauth   *oauth.Handler
	rest    *restcat.Handler
	maint   *maint.Scheduler // nil when maintenance is off
	// maintainer runs maintenance on demand (see maint.go).
	maintainer *maint.Maintainer
	// stopPurgeWorker stops the purge worker (see purge.go).
	stopPurgeWorker func()
	// auditExport appends the audit log to system.audit (nil when off; see auditexport.go).
	auditExport *auditExporter
	// auditPrune deletes audit records older than the retention (nil when off; see auditprune.go).
	auditPrune *auditPruner
	// auditSeal writes checkpoints of the audit chain into the warehouse (nil when off; see auditseal.go).
	auditSeal *auditSealer
	// sql is the SQL endpoint (nil when off; see sql.go).
	sql *sqlEndpoint
	// ingest loads data into tables for the management API (see ingest.go).
	ingest *ingester
	// handler sends /v1/oauth/* and /.well-known/* to oauth, the rest to rest.
	handler http.Handler
	// tls is the listeners' TLS configuration (see tls.go).
	tls *tlsState
	// revocations is this node's revocation state (see revoke.go);
	// stopRevocations stops its refresh.
	revocations     *revoke.List
	stopRevocations func()
	// sharing is the sharing service (see sharing.go).
	sharing *sharing.Service
	// products is the data products service (see products.go);
	// stopProducts stops its scheduled checks.
	products     *products.Service
	stopProducts func()
	// cleanrooms is the clean room service (see cleanrooms.go); nil under
	// insecure_no_auth.
	cleanrooms *cleanroom.Service

	// runtimeForeign are the federated catalogs created at run time
	// (federation_runtime.go).
	runtimeForeign *foreignRegistry

	// metrics is the node's registry (nil when admin_listen is off; see
	// admin.go); adminSrv and adminLn serve it.
	metrics *metrics.Metrics
	// tracer is the node's tracer (zero when tracing is off; see tracing.go).
	tracer   tracing.Tracer
	adminSrv *netlimit.Server
	adminLn  net.Listener

	srv   *netlimit.Server
	ln    net.Listener
	s3srv *netlimit.Server
	s3ln  net.Listener

	// Bootstrap is set when this start created the first admin principal.
	Bootstrap *Credential
}

// Credential is a client id and its secret.
type Credential struct {
	ClientID, Secret string
}

// String renders the credential as Iceberg clients take it: "id:secret".
func (c Credential) String() string { return c.ClientID + ":" + c.Secret }

// Open opens the store and storage, initialises auth and the default
// warehouse, and bootstraps the first admin principal if there is none.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	if err := cfg.Finish(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	a := &App{cfg: cfg, log: log}
	a.newMetrics()
	if err := a.newTracer(ctx); err != nil {
		return nil, err
	}
	sopts := sqlstore.Options{Logger: log}
	if a.metrics != nil {
		sopts.Observe = a.metrics.StoreQuery
	}
	st, err := sqlstore.Open(ctx, cfg.Store, sopts)
	if err != nil {
		_ = a.stopTracer(ctx)
		return nil, fmt.Errorf("open store: %w", err)
	}
	a.store = st
	if err := a.init(ctx); err != nil {
		if a.runtimeForeign != nil {
			a.runtimeForeign.stop()
		}
		_ = st.Close()
		_ = a.stopTracer(ctx)
		return nil, err
	}
	return a, nil
}

func (a *App) init(ctx context.Context) error {
	cfg := a.cfg
	if err := a.setupTLS(); err != nil {
		return err
	}
	issuer := cfg.PublicURL
	if issuer == "" {
		issuer = scheme(a.tls.rest) + "://" + cfg.Listen // made exact in Start
	}
	// Keys at rest: the wrappers first, and every secret of the store
	// sealed under the current key before anything reads one.
	if err := a.openKeys(ctx); err != nil {
		return err
	}
	a.auth = auth.New(a.store, auth.Options{Issuer: issuer, TokenTTL: cfg.TokenTTL, Logger: a.log, TrustedIssuers: cfg.TrustedIssuers,
		Sealer: a.sealer})
	if err := a.auth.Init(ctx); err != nil {
		return err
	}
	// Audit checkpoints (retention) are signed with the token-signing key.
	// The export to system.audit reads the records this node just stored
	// from memory, and starts early once a batch's worth is waiting.
	a.auditTail = audit.NewTail(a.store, 0, 0, auditTailWake)
	if a.cfg.AuditExportInterval > 0 {
		a.metrics.PendingAuditRecords(func() int { n, _ := a.auditTail.Len(); return n })
	}
	a.audit = audit.New(a.store, audit.Options{Logger: a.log, Signer: a.auth, Tail: a.auditTail})
	a.events = audit.NewAsync(a.audit, audit.AsyncOptions{Logger: a.log, Observe: a.metrics.AuditWriteLag})
	if err := a.openRevocations(ctx); err != nil {
		return err
	}
	io, err := a.openStorage(ctx)
	if err != nil {
		return err
	}
	a.warehouseIO = io
	if err := a.store.PutWarehouse(ctx, catalog.Warehouse{Name: cfg.Warehouse, Location: cfg.WarehouseLocation}); err != nil {
		return fmt.Errorf("warehouse: %w", err)
	}
	catOpts := catalog.Options{Logger: a.log, MetadataCacheBytes: cfg.MetadataCacheBytes * 3 / 4,
		BeforeSchemaChange: a.bindBeforeSchemaChange, AllowedLocations: cfg.AllowedLocations}
	cfg.Purge.catalogOptions(&catOpts, cfg.PurgeHook)
	if a.metrics != nil {
		catOpts.Observe = a.metrics
	}
	a.cat = catalog.New(a.store, io, catOpts)
	a.rowFilters = rowfilter.New()
	a.viewRenamer = viewrename.New()
	a.authz = authz.New(a.store, authz.Options{Logger: a.log, Tables: tableColumns{a.cat}, RowFilters: a.rowFilters})
	a.sharing = a.newSharing()
	a.oauth = oauth.New(a.auth, oauth.Options{Logger: a.log, Audit: a.audit, FailuresPerMinute: cfg.AuthFailuresPerMinute})
	opts := restcat.Options{
		DefaultWarehouse: cfg.Warehouse,
		Idempotency:      a.store,
		MaxBodyBytes:     cfg.MaxBodyBytes,
		PublicURL:        cfg.PublicURL,
		Vending:          a.vending(),
		Authz:            a.authz,
		Audit:            a.events.Record,
		Logger:           a.log,
		Foreign:          cfg.ForeignResolver,
	}
	if opts.Foreign == nil {
		opts.Foreign = a.foreignCatalogByName
	}
	if sp := cfg.ScanPlanning; !sp.Disabled {
		fsys, err := a.lakeFS(ctx)
		if err != nil {
			return fmt.Errorf("scan planning: %w", err)
		}
		opts.Planning = &restcat.Planning{FS: fsys, PageSize: sp.PageSize, CacheEntries: sp.CacheEntries,
			CacheBytes: sp.CacheBytes, TTL: sp.TTL, Async: restcat.AsyncPlanning{ThresholdFiles: sp.AsyncThresholdFiles,
				Workers: sp.AsyncWorkers, Queue: sp.AsyncQueue, PerPrincipal: sp.AsyncPerPrincipal},
			ManifestCacheBytes: sp.ManifestCacheBytes,
			Signer:             a.auth, // plan ids signed with the shared token keys: any node answers them
			Cancels:            planCancels{a}}
	}
	if err := a.initForeign(); err != nil {
		return err
	}
	a.initRuntimeForeign(ctx)
	if cfg.InsecureNoAuth {
		a.log.Warn("AUTHENTICATION IS DISABLED (insecure_no_auth): anyone who can reach this port can read and change every table. Use only for throwaway local work.")
	} else {
		opts.Auth = a.auth
	}
	a.rest = restcat.New(a.cat, opts)
	maintainer, jobs, err := a.newMaintenance(ctx)
	if err != nil {
		return fmt.Errorf("maintenance: %w", err)
	}
	a.maintainer = maintainer
	if cfg.Maintenance {
		a.maint, err = maint.New(a.store, jobs, maint.Options{
			Interval: cfg.MaintenanceInterval, LeaseTTL: cfg.MaintenanceLeaseTTL, Hook: cfg.MaintenanceHook, Logger: a.log,
			Observe: a.metrics.MaintenanceRun,
		})
		if err != nil {
			return fmt.Errorf("maintenance: %w", err)
		}
		for _, j := range jobs {
			maintainer.Scheduled = append(maintainer.Scheduled, j.Name())
		}
	}
	if a.ingest, err = a.newIngester(ctx); err != nil {
		return err
	}
	a.products = a.newProducts()
	a.cleanrooms = a.newCleanRooms()
	mgmt := a.mgmtHandler()
	ds := a.deltaSharing()        // nil: not mounted
	shareCat := a.shareCatalogs() // nil: not mounted
	var con http.Handler          // nil: the console is off
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if con != nil && console.Route(r.URL.Path) {
			con.ServeHTTP(w, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/v1/") {
			mgmt.ServeHTTP(w, r)
			return
		}
		if ds != nil && deltaSharingRoute(r.URL.Path) {
			ds.ServeHTTP(w, r)
			return
		}
		if shareCat != nil && sharecat.Route(r.URL.Path) {
			shareCat.ServeHTTP(w, r)
			return
		}
		if oauth.Routes(r.URL.Path) {
			a.oauth.ServeHTTP(w, r)
			return
		}
		a.rest.ServeHTTP(w, r)
	})
	if cfg.Console != "off" {
		con = a.newConsole(inner)
	}
	a.handler = inner
	a.health = newHealth(a)
	a.handler = a.observeHTTP(a.restTLSHandler(a.health.wrap(a.handler)), ds != nil, shareCat != nil)
	return nil
}

// bootstrap creates the admin principal when no principal exists. Start
// calls it once every listener is bound, so that a start that cannot serve
// (a port taken) leaves no admin whose credential nobody saw: the next
// start creates it and prints it. Of nodes starting at once on a shared
// store, one creates the admin (the principal name is unique); the others
// find it taken and go on without a credential to print.
func (a *App) bootstrap(ctx context.Context) error {
	ps, err := a.store.ListPrincipals(ctx)
	if err != nil {
		return fmt.Errorf("list principals: %w", err)
	}
	if len(ps) > 0 {
		return nil
	}
	var id, secret string
	if c := a.cfg.BootstrapCredential; c != "" {
		id, secret, _ = strings.Cut(c, ":")
	}
	p, secret, err := a.auth.CreatePrincipal(ctx, "admin", nil, true, id, secret)
	if floe.KindOf(err) == floe.AlreadyExists {
		a.log.Info("another node created the first admin principal")
		return nil
	}
	if err != nil {
		return fmt.Errorf("bootstrap admin: %w", err)
	}
	a.Bootstrap = &Credential{ClientID: p.ClientID, Secret: secret}
	a.log.Info("created the first admin principal", "name", p.Name, "client_id", p.ClientID)
	return nil
}

// Handler returns the HTTP handler of the node: the REST catalog, the
// OAuth endpoints under /v1/oauth/ and the metadata under /.well-known/.
func (a *App) Handler() http.Handler { return a.handler }

// RESTOperations lists the REST catalog's operations by name.
func (a *App) RESTOperations() []string { return a.rest.Operations() }

// Audit returns the audit log.
func (a *App) Audit() *audit.Log { return a.audit }

// Authz returns the authorizer (grants, roles, tags, decisions).
func (a *App) Authz() *authz.Authorizer { return a.authz }

// Auth returns the token service.
func (a *App) Auth() *auth.Service { return a.auth }

// Catalog returns the catalog service.
func (a *App) Catalog() *catalog.Catalog { return a.cat }

// Maintenance returns the maintenance scheduler, or nil when maintenance is off.
func (a *App) Maintenance() *maint.Scheduler { return a.maint }

// Store returns the metadata store.
func (a *App) Store() *sqlstore.Store { return a.store }

// Config returns the effective configuration.
func (a *App) Config() Config { return a.cfg }

// Start listens on the configured address and serves in the background.
func (a *App) Start() error {
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", a.cfg.Listen, err)
	}
	a.ln = ln
	if a.cfg.PublicURL == "" {
		a.auth.SetIssuer(a.URL())
		if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
			a.log.Warn("listening on all interfaces without public_url: the OAuth issuer is " + a.URL() +
				"; set public_url (FLOE_PUBLIC_URL) to the URL clients use")
		}
	}
	a.srv = netlimit.New("catalog", a.restGuard(a.handler), a.cfg.HTTP.netlimit(), a.log)
	if err := a.listenS3(); err != nil {
		_ = ln.Close()
		return err
	}
	if err := a.startSQL(context.Background()); err != nil {
		_ = ln.Close()
		if a.s3ln != nil {
			_ = a.s3ln.Close()
		}
		return err
	}
	if err := a.listenAdmin(); err != nil {
		_ = ln.Close()
		if a.s3ln != nil {
			_ = a.s3ln.Close()
		}
		err = errors.Join(err, a.stopSQL(context.Background()))
		a.sql = nil
		return err
	}
	// Every listener is bound: only now may the first admin be created.
	if err := a.bootstrap(context.Background()); err != nil {
		_ = ln.Close()
		if a.s3ln != nil {
			_ = a.s3ln.Close()
		}
		a.closeAdminListener()
		err = errors.Join(err, a.stopSQL(context.Background()))
		a.sql = nil
		return err
	}
	go func() {
		if err := serveOn(a.srv, ln, a.tls.rest); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("catalog server stopped", "err", err)
		}
	}()
	a.serveS3()
	a.serveAdmin()
	if a.maint != nil {
		a.maint.Start(context.Background())
	}
	a.startPurges()
	a.startAuditExport()
	a.startAuditPrune()
	a.startAuditSeal()
	a.startProductChecks()
	return nil
}

// URL is the base URL of the REST catalog (valid after Start).
func (a *App) URL() string {
	if a.ln == nil {
		return ""
	}
	return scheme(a.tls.rest) + "://" + a.ln.Addr().String()
}

// AdminToken issues a token for the admin principal (for in-process tools such as the demo loader).
func (a *App) AdminToken(ctx context.Context) (string, error) {
	return a.PrincipalToken(ctx, "admin")
}

// PrincipalToken issues an access token for the principal name with its
// scopes, in process (no secret involved): the demo acts as the principals
// it creates with it. A disabled principal gets none.
func (a *App) PrincipalToken(ctx context.Context, name string) (string, error) {
	p, err := a.store.PrincipalByName(ctx, name)
	if err != nil {
		return "", err
	}
	if p.Disabled {
		return "", floe.E(floe.Forbidden, "principal", "principal %q is disabled", name)
	}
	t, err := a.auth.Issue(ctx, p, p.Scopes)
	if err != nil {
		return "", err
	}
	return t.AccessToken, nil
}

// Close stops maintenance (cancelling running jobs, whose leases it
// releases), stops serving and closes the store.
func (a *App) Close(ctx context.Context) error {
	var errs []error
	a.stopProductChecks()
	errs = append(errs, a.stopAuditExport(), a.stopAuditPrune())
	a.stopAuditSeal()
	if a.maint != nil {
		errs = append(errs, a.maint.Close())
	}
	a.stopPurges()
	errs = append(errs, a.stopSQL(ctx))
	if a.srv != nil {
		errs = append(errs, a.srv.Shutdown(ctx))
	}
	if a.rest != nil {
		a.rest.Close() // background scan plans
	}
	if a.s3srv != nil {
		errs = append(errs, a.s3srv.Shutdown(ctx))
	}
	errs = append(errs, a.stopAdmin(ctx))
	errs = append(errs, a.closeIngester(ctx))
	if a.stopRevocations != nil {
		a.stopRevocations()
	}
	if a.runtimeForeign != nil {
		a.runtimeForeign.stop()
	}
	if a.events != nil {
		errs = append(errs, a.events.Close(ctx))
	}
	// The last checkpoint, once every event is stored.
	errs = append(errs, a.sealAtShutdown(ctx))
	if a.objects != nil {
		errs = append(errs, a.objects.Close())
	}
	if a.viewRenamer != nil {
		errs = append(errs, a.viewRenamer.Close())
	}
	if a.rowFilters != nil {
		errs = append(errs, a.rowFilters.Close())
	}
	errs = append(errs, a.store.Close())
	// Last: flush the spans of everything above.
	errs = append(errs, a.stopTracer(ctx))
	return errors.Join(errs...)
}
