package app

import (
	"context"
	"io"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/mgmtapi"
	"github.com/floe-lake/floe/store/backup"
	"github.com/floe-lake/floe/store/sqlstore"
)

// mgmtHandler builds the management API handler (served under /api/v1/).
func (a *App) mgmtHandler() http.Handler {
	opts := mgmtapi.Options{
		Authz:            a.authz,
		Principals:       principalAdmin{auth: a.auth, store: a.store},
		DefaultWarehouse: a.cfg.Warehouse,
		Audit:            a.auditMgmt,
		Maintenance:      a.maintainer,
		Ingest:           a.ingest,
		Query:            a.queryFunc(),
		Tombstones:       a.cat,
		Functions:        a.cat,
		Sharing:          a.sharing,
		Federation:       a.runtimeForeign.svc,
		Products:         a.products,
		CleanRooms:       a.cleanRoomsAPI(),
		PublicURL:        a.cfg.PublicURL,
		AuditLog:         auditReader{a},
		Logger:           a.log,
		Backup: func(ctx context.Context, w io.Writer) (backup.Header, backup.Trailer, error) {
			return a.store.Backup(ctx, w, sqlstore.BackupOptions{FloeVersion: floeVersion()})
		},
	}
	if !a.cfg.InsecureNoAuth {
		opts.Auth = a.auth
		if a.sharing != nil && a.cleanrooms != nil {
			opts.Recipients = recipientVerifier{a}
		}
	}
	return mgmtapi.New(opts)
}

// floeVersion is the module version of the running binary, for backup
// headers.
func floeVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// auditMgmt records a management API mutation synchronously: these are
// rare, and a grant or revoke is on record before its response is sent.
func (a *App) auditMgmt(ctx context.Context, e audit.Event) {
	if _, err := a.audit.Append(ctx, e); err != nil {
		a.log.ErrorContext(ctx, "audit: management event not recorded", "action", e.Action, "request_id", e.RequestID, "err", err)
	}
}

// principalAdmin is the principal registry of the management API.
type principalAdmin struct {
	auth  *auth.Service
	store *sqlstore.Store
}

func (p principalAdmin) CreatePrincipal(ctx context.Context, name string, scopes []string, admin bool) (auth.Principal, string, error) {
	return p.auth.CreatePrincipal(ctx, name, scopes, admin, "", "")
}

func (p principalAdmin) ListPrincipals(ctx context.Context) ([]auth.Principal, error) {
	return p.store.ListPrincipals(ctx)
}

func (p principalAdmin) PrincipalByName(ctx context.Context, name string) (auth.Principal, error) {
	return p.store.PrincipalByName(ctx, name)
}

func (p principalAdmin) SetPrincipalDisabled(ctx context.Context, name string, disabled bool) error {
	return p.store.SetPrincipalDisabled(ctx, name, disabled)
}

func (p principalAdmin) SetPrincipalAllowedCIDRs(ctx context.Context, name string, cidrs []string) ([]string, error) {
	return p.auth.SetAllowedCIDRs(ctx, name, cidrs)
}

func (p principalAdmin) RotateSecret(ctx context.Context, name string, grace time.Duration) (auth.Principal, string, error) {
	return p.auth.RotateSecret(ctx, name, grace)
}

func (p principalAdmin) RevokeTokens(ctx context.Context, name string) (time.Time, error) {
	return p.auth.RevokeTokens(ctx, name)
}

// auditReader reads the audit log for the management API.
type auditReader struct{ a *App }

func (r auditReader) AuditQuery(ctx context.Context, q audit.Query) ([]audit.Record, error) {
	return r.a.store.AuditQuery(ctx, q)
}

func (r auditReader) VerifyChain(ctx context.Context) (audit.VerifyResult, error) {
	return r.a.audit.VerifyChain(ctx)
}
