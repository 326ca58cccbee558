package app

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/console"
	"github.com/floe-lake/floe/netallow"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// newConsole builds the web console (served under /console/), which
// forwards its API calls to upstream, the catalog listener's dispatcher.
func (a *App) newConsole(upstream http.Handler) http.Handler {
	opts := console.Options{Upstream: upstream, Audit: a.auditMgmt, MaxSessions: a.cfg.ConsoleMaxSessions, PublicURL: a.cfg.PublicURL, Logger: a.log,
		Sessions: a.store} // shared by every node on the store
	if !a.cfg.InsecureNoAuth {
		opts.Tokens = a.auth
		opts.Password = a.consolePassword
	}
	return console.New(opts)
}

// consolePassword signs a console user in with its SQL password: the SQL
// endpoint checks it (its SCRAM verifier and its login limiter, keyed by
// user and address), then a token is issued for the principal as the
// token endpoint issues one for client credentials (with the principal's
// scopes and allowlist).
func (a *App) consolePassword(ctx context.Context, user, password string, client net.Addr) (console.Issued, error) {
	if a.sql == nil {
		return console.Issued{}, floe.E(floe.Unsupported, "password", "the SQL endpoint is off: sign in with a client id and secret")
	}
	id, err := a.sql.server.CheckPassword(ctx, user, password, client)
	if err != nil {
		var te *pgwire.ThrottledError
		switch {
		case errors.As(err, &te):
			return console.Issued{}, &console.ThrottledError{RetrySeconds: te.RetrySeconds()}
		case errors.Is(err, pgwire.ErrBadCredentials):
			return console.Issued{}, &floe.Error{Kind: floe.Unauthenticated, Entity: "password", Msg: "wrong user name or password", Err: err}
		}
		return console.Issued{}, err
	}
	p, err := a.store.PrincipalByName(ctx, id.Principal)
	if err != nil {
		return console.Issued{}, err
	}
	if p.Disabled { // disabled since the password was checked
		return console.Issued{}, &floe.Error{Kind: floe.Unauthenticated, Entity: "password", Msg: "wrong user name or password"}
	}
	if client != nil {
		ctx = netallow.WithClient(ctx, netallow.AddrOf(client))
	}
	t, err := a.auth.Issue(ctx, p, p.Scopes)
	if err != nil {
		return console.Issued{}, err
	}
	return console.Issued{Principal: p.Name, Token: t.AccessToken, ExpiresAt: t.ExpiresAt}, nil
}
