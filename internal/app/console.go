package app

import (
	"net/http"

	"github.com/floe-lake/floe/console"
)

// newConsole builds the web console (served under /console/), which
// forwards its API calls to upstream, the catalog listener's dispatcher.
func (a *App) newConsole(upstream http.Handler) http.Handler {
	opts := console.Options{Upstream: upstream, Audit: a.auditMgmt, MaxSessions: a.cfg.ConsoleMaxSessions, PublicURL: a.cfg.PublicURL, Logger: a.log}
	if !a.cfg.InsecureNoAuth {
		opts.Tokens = a.auth
	}
	return console.New(opts)
}
