package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/floe-lake/floe/audit"
	"net"
	"strings"

	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/sharing"

	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/sqlgw/engine"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// sqlEndpoint is the PostgreSQL-wire SQL endpoint of the node.
type sqlEndpoint struct {
	engine *engine.Engine
	server *pgwire.Server
	ln     net.Listener
}

// sqlEnabled reports whether the SQL endpoint is configured to run.
func (c Config) sqlEnabled() bool { return c.SQLListen != "" && c.SQLListen != "off" }

// startSQL serves the SQL endpoint on sql_listen, unless it is off.
func (a *App) startSQL(ctx context.Context) error {
	cfg := a.cfg
	if !cfg.sqlEnabled() {
		return nil
	}
	fsys, err := a.lakeFS(ctx)
	if err != nil {
		return err
	}
	var objects engine.ObjectSource
	if a.objects != nil {
		objects = engine.BucketSource{Store: a.objects}
	} else {
		objects = engine.IOSource{FS: fsys}
	}
	opts := engine.Options{
		Warehouse:        cfg.Warehouse,
		TrinoCatalog:     cfg.SQLViewTrinoCatalog,
		Tables:           lake.New(a.cat, fsys, lake.Options{Logger: a.log}),
		Catalog:          a.cat,
		Foreign:          newSQLForeign(a),
		DDL:              a.cat,
		Metrics:          productMetrics{a},
		MaxTxnStatements: cfg.SQLMaxTransactionStatements,
		MaxTempTables:    cfg.SQLMaxTempTables,
		MaxTempRows:      cfg.SQLMaxTempRows,
		Objects:          objects,
		CacheBytes:       cfg.SQLCacheBytes,
		MemoryLimit:      cfg.SQLMemoryLimit,
		Threads:          cfg.SQLThreads,
		TableCacheBytes:  cfg.SQLTableCacheBytes,
		CacheFiles:       cfg.SQLCacheFiles,
		PlanCacheBytes:   cfg.MetadataCacheBytes / 4,
		Audit:            a.auditSQL,
		Logger:           a.log,
	}
	if !cfg.InsecureNoAuth {
		opts.Policies = a.authz
		opts.Grants = a.authz
		if a.cleanrooms != nil {
			opts.CleanRooms = a.cleanrooms
		}
	}
	eng, err := engine.New(opts)
	if err != nil {
		return fmt.Errorf("sql engine: %w", err)
	}
	// sql_tls_cert, else tls_cert or --tls-self-signed (see tls.go).
	tlsConfig := a.tls.sql
	srv, err := pgwire.New(pgwire.Options{
		Engine:                  eng,
		Tracer:                  a.requestTracer(),
		Authenticator:           sqlAuth{a: a},
		TLSConfig:               tlsConfig,
		Logger:                  a.log,
		MaxConnections:          cfg.SQLMaxConnections,
		MaxUnauthenticated:      cfg.SQLMaxUnauthenticated,
		MaxUnauthenticatedPerIP: cfg.SQLMaxUnauthenticatedPerIP,
		StartupTimeout:          cfg.SQLStartupTimeout,
		LoginFailuresPerMinute:  max(0, cfg.SQLLoginFailuresPerMinute),
		MaxStatementTimeout:     cfg.SQLMaxStatementTimeout,
		CheckClient:             a.sqlCheckClient,
	})
	if err != nil {
		return fmt.Errorf("sql endpoint: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.SQLListen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.SQLListen, err)
	}
	a.sql = &sqlEndpoint{engine: eng, server: srv, ln: ln}
	if a.vend != nil {
		a.vend.SQLAddress = ln.Addr().String() // named to readers refused files for a data filter
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, pgwire.ErrServerClosed) {
			a.log.Error("sql endpoint stopped", "err", err)
		}
	}()
	return nil
}

// SQLAddr is the address of the SQL endpoint ("" when it is off; valid
// after Start).
func (a *App) SQLAddr() string {
	if a.sql == nil {
		return ""
	}
	return a.sql.ln.Addr().String()
}

// SQLEngine returns the SQL endpoint's engine, or nil when the endpoint is off.
func (a *App) SQLEngine() *engine.Engine {
	if a.sql == nil {
		return nil
	}
	return a.sql.engine
}

// stopSQL ends the SQL sessions and releases the engine.
func (a *App) stopSQL(ctx context.Context) error {
	if a.sql == nil {
		return nil
	}
	err := a.sql.server.Shutdown(ctx)
	return errors.Join(err, a.sql.engine.Close())
}

// sqlAuth logs SQL sessions in: principals with a SQL password by
// SCRAM-SHA-256, any principal with a Floe access token as its password.
type sqlAuth struct{ a *App }

// SCRAMVerifier returns the stored verifier of an enabled principal with a
// SQL password (floe principal set-password); ok is false otherwise, and
// the client is then asked for an access token.
func (s sqlAuth) SCRAMVerifier(ctx context.Context, user string) (*pgwire.ScramVerifier, pgwire.Identity, bool, error) {
	if s.a.cfg.InsecureNoAuth {
		return nil, pgwire.Identity{}, false, nil
	}
	since := s.a.revocations.Version() // before the principal is read: a disable after it ends the session
	p, stored, ok, err := s.a.auth.SQLPassword(ctx, user)
	if err != nil || !ok {
		return nil, pgwire.Identity{}, false, err
	}
	v, err := pgwire.ParseScramVerifier(stored)
	if err != nil {
		return nil, pgwire.Identity{}, false, fmt.Errorf("stored SQL password of %s: %w", user, err)
	}
	claims := auth.Claims{PrincipalID: p.ID, Principal: p.Name, ClientID: p.ClientID, Admin: p.Admin, Scopes: p.Scopes,
		AllowedCIDRs: p.AllowedCIDRs}
	id := sqlIdentity(claims)
	id.Revoked = s.a.sessionRevoked("", p.Name, since)
	return v, id, true, nil
}

// Token verifies an access token as the REST catalog does.
func (s sqlAuth) Token(ctx context.Context, user, token string) (pgwire.Identity, error) {
	if s.a.cfg.InsecureNoAuth {
		return pgwire.Identity{Principal: user, Payload: engine.Caller{Subject: authz.Subject{Principal: user, Admin: true}, Unrestricted: true}}, nil
	}
	if strings.HasPrefix(token, sharing.TokenPrefix) && s.a.sharing != nil && s.a.cleanrooms != nil {
		return s.a.recipientIdentity(ctx, token)
	}
	since := s.a.revocations.Version() // before the token is verified: a revocation after it ends the session
	claims, err := s.a.auth.Verify(ctx, token)
	if err != nil {
		return pgwire.Identity{}, err
	}
	id := sqlIdentity(claims)
	id.Revoked = s.a.sessionRevoked(claims.TokenID, claims.Principal, since)
	return id, nil
}

// sqlIdentity is the session identity of an authenticated principal.
func sqlIdentity(claims auth.Claims) pgwire.Identity {
	// A recipient (another organisation's clean-room member) may only
	// query in its collaborations; no principal's name can look like one.
	return pgwire.Identity{Principal: claims.Principal, Payload: engine.Caller{Subject: authz.SubjectOf(claims), Unrestricted: claims.Admin, ReadOnly: !claims.CanWriteCatalog(), TokenID: claims.TokenID,
		RoomsOnly: cleanroom.IsRecipient(claims.Principal)},
		AllowedCIDRs: claims.AllowedCIDRs}
}

// auditSQL records a SQL endpoint's audit event, counting statements and
// their rows (floe_sql_queries_total, floe_sql_rows_total) on the way.
func (a *App) auditSQL(ctx context.Context, e audit.Event) {
	if e.Action == "sql.query" && a.metrics != nil {
		var rows int64
		switch n := e.Detail["rows"].(type) {
		case int64:
			rows = n
		case int:
			rows = int64(n)
		}
		result := e.Outcome
		if result == audit.OutcomeError {
			result = audit.OutcomeFailure
		}
		a.metrics.SQLQuery(result, rows)
	}
	a.events.Record(ctx, e)
}
