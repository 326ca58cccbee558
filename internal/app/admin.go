package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/floe-lake/floe/console"
	"github.com/floe-lake/floe/internal/metrics"
	"github.com/floe-lake/floe/internal/netlimit"
	"github.com/floe-lake/floe/internal/obs"
	"github.com/floe-lake/floe/oauth"
	"github.com/floe-lake/floe/sharing/sharecat"
)

// The admin listener (admin_listen) serves Prometheus metrics at /metrics
// and the /healthz and /readyz probes, and nothing else: never the
// catalog. Metrics are collected only while it runs; with it off the
// recorders are the no-op nil *metrics.Metrics.

// newMetrics makes the node's registry when the admin listener is on.
func (a *App) newMetrics() {
	if a.cfg.adminEnabled() {
		a.metrics = metrics.New()
	}
}

// Metrics returns the node's metrics (nil when the admin listener is off).
func (a *App) Metrics() *metrics.Metrics { return a.metrics }

// recorder is the obs.Recorder of the HTTP middleware (nil: none).
func (a *App) recorder() obs.Recorder {
	if a.metrics == nil {
		return nil
	}
	return a.metrics
}

// adminHandler serves /metrics, /healthz and /readyz; everything else is 404.
func (a *App) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metrics.Handler())
	mux.HandleFunc("/", http.NotFound)
	return a.health.wrap(mux)
}

// listenAdmin binds the admin listener.
func (a *App) listenAdmin() error {
	if !a.cfg.adminEnabled() {
		return nil
	}
	ln, err := net.Listen("tcp", a.cfg.AdminListen)
	if err != nil {
		return fmt.Errorf("admin listener (admin_listen, FLOE_ADMIN_LISTEN): listen %s: %w; set another address or off", a.cfg.AdminListen, err)
	}
	a.adminLn = ln
	a.adminSrv = netlimit.New("admin", a.adminHandler(), a.cfg.HTTP.netlimit(), a.log)
	return nil
}

// serveAdmin serves the admin listener in the background.
func (a *App) serveAdmin() {
	if a.adminSrv == nil {
		return
	}
	go func() {
		if err := a.adminSrv.Serve(a.adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("admin listener stopped", "err", err)
		}
	}()
}

// closeAdminListener closes a bound admin listener that never served.
func (a *App) closeAdminListener() {
	if a.adminLn != nil && a.adminSrv != nil {
		_ = a.adminLn.Close()
	}
}

// stopAdmin shuts the admin listener down.
func (a *App) stopAdmin(ctx context.Context) error {
	if a.adminSrv == nil {
		return nil
	}
	return a.adminSrv.Shutdown(ctx)
}

// AdminURL is the base URL of the admin listener ("" when it is off or
// before Start).
func (a *App) AdminURL() string {
	if a.adminLn == nil {
		return ""
	}
	return "http://" + a.adminLn.Addr().String()
}

// observeHTTP wraps the catalog listener's handler: metrics and a log line
// per request, labelled with the part of Floe that served it.
func (a *App) observeHTTP(h http.Handler, ds bool, shareCat bool) http.Handler {
	return obs.Middleware(h, obs.Options{
		Listener: func(r *http.Request) string { return listenerOf(r.URL.Path, ds, shareCat) },
		Route:    oauthRoute,
		Recorder: a.recorder(),
		Logger:   a.log,
		Tracer:   a.requestTracer(),
	})
}

// listenerOf names the part of the catalog listener that serves path, as
// the dispatcher in init does.
func listenerOf(path string, ds, shareCat bool) string {
	switch {
	case strings.HasPrefix(path, "/api/v1/"):
		return "mgmt"
	case ds && deltaSharingRoute(path):
		return "deltasharing"
	case shareCat && sharecat.Route(path):
		return "sharecat"
	case oauth.Routes(path):
		return "oauth"
	case console.Route(path):
		return "console"
	}
	return "rest"
}

// oauthRoute is the route of an OAuth request: its fixed path, or the
// metadata path's template; "" (other) for anything else.
func oauthRoute(r *http.Request) string {
	switch p := r.URL.Path; p {
	case oauth.TokenPath, oauth.RevokePath, oauth.MetadataPath, oauth.OpenIDPath, oauth.JWKSPath:
		return p
	default:
		if strings.HasPrefix(p, oauth.MetadataPath+"/") {
			return oauth.MetadataPath + "/{issuer}"
		}
	}
	return ""
}

// observeS3 wraps the S3 listener's handler; the route is the operation
// name, which the access hook (auditObject) reports.
func (a *App) observeS3(h http.Handler) http.Handler {
	return obs.Middleware(h, obs.Options{Name: "s3", Recorder: a.recorder(), Logger: a.log, Tracer: a.requestTracer()})
}
