package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/netallow"
)

// Allowlists are the optional CIDR allowlists of the listeners and the
// proxies whose X-Forwarded-For is believed. An empty list allows every
// address. Entries are CIDR prefixes ("10.0.0.0/8", "2001:db8::/32") or
// bare addresses; env variables and flags take them comma-separated.
type Allowlists struct {
	// RESTAllowCIDRs is the allowlist of the REST catalog listener (with
	// the OAuth token endpoint and the management API) (env
	// FLOE_REST_ALLOW_CIDRS, flag --rest-allow-cidrs).
	RESTAllowCIDRs []string `yaml:"rest_allow_cidrs"`
	// S3AllowCIDRs is the allowlist of the embedded S3 endpoint (env
	// FLOE_S3_ALLOW_CIDRS, flag --s3-allow-cidrs).
	S3AllowCIDRs []string `yaml:"s3_allow_cidrs"`
	// SQLAllowCIDRs is the allowlist of the SQL endpoint, checked against
	// the TCP peer before the password exchange (env FLOE_SQL_ALLOW_CIDRS,
	// flag --sql-allow-cidrs).
	SQLAllowCIDRs []string `yaml:"sql_allow_cidrs"`
	// TrustedProxies are the peers whose X-Forwarded-For header the HTTP
	// listeners believe when they decide a request's client address (env
	// FLOE_TRUSTED_PROXIES, flag --trusted-proxies; default none: the
	// header is ignored).
	TrustedProxies []string `yaml:"trusted_proxies"`

	rest, s3, sql, proxies netallow.List
	// denied bounds the net.denied audit events (made by Finish).
	denied *deniedAudit
}

func (n *Allowlists) loadEnv(getenv func(string) string) {
	for name, dst := range map[string]*[]string{"FLOE_REST_ALLOW_CIDRS": &n.RESTAllowCIDRs, "FLOE_S3_ALLOW_CIDRS": &n.S3AllowCIDRs,
		"FLOE_SQL_ALLOW_CIDRS": &n.SQLAllowCIDRs, "FLOE_TRUSTED_PROXIES": &n.TrustedProxies} {
		if v := getenv(name); v != "" {
			*dst = strings.Split(v, ",")
		}
	}
}

// validate parses the lists; an unparseable entry is a configuration error.
func (n *Allowlists) validate() error {
	for _, l := range []struct {
		key string
		src []string
		dst *netallow.List
	}{{"rest_allow_cidrs", n.RESTAllowCIDRs, &n.rest}, {"s3_allow_cidrs", n.S3AllowCIDRs, &n.s3},
		{"sql_allow_cidrs", n.SQLAllowCIDRs, &n.sql}, {"trusted_proxies", n.TrustedProxies, &n.proxies}} {
		parsed, err := netallow.Parse(l.src)
		if err != nil {
			return fmt.Errorf("%s: %w", l.key, err)
		}
		*l.dst = parsed
	}
	n.denied = newDeniedAudit(deniedAuditPerSecond, time.Now)
	return nil
}

// deniedAuditPerSecond bounds the net.denied audit events per listener and
// second: clients outside an allowlist must not be able to make the
// server write to its store without limit. Refusals beyond it are still
// refused and logged at debug, and counted: the next recorded event of
// that listener says how many were not recorded ("suppressed").
const deniedAuditPerSecond = 20

// deniedAudit is a per-listener, per-second budget of net.denied events.
// Its state is one counter pair per listener name (three at most).
type deniedAudit struct {
	limit int
	now   func() time.Time

	mu sync.Mutex
	by map[string]*deniedWindow
}

type deniedWindow struct {
	second     int64
	recorded   int
	suppressed int64
}

func newDeniedAudit(limit int, now func() time.Time) *deniedAudit {
	return &deniedAudit{limit: limit, now: now, by: map[string]*deniedWindow{}}
}

// take reports whether a refusal on listener is recorded, and if so how
// many refusals before it were not.
func (d *deniedAudit) take(listener string) (record bool, suppressed int64) {
	sec := d.now().Unix()
	d.mu.Lock()
	defer d.mu.Unlock()
	w := d.by[listener]
	if w == nil {
		w = &deniedWindow{second: sec}
		d.by[listener] = w
	}
	if w.second != sec {
		w.second, w.recorded = sec, 0
	}
	if w.recorded >= d.limit {
		w.suppressed++
		return false, 0
	}
	w.recorded++
	suppressed, w.suppressed = w.suppressed, 0
	return true, suppressed
}

// guard puts a listener's allowlist in front of h: a request from outside
// it is answered by deny (in the listener's protocol) and audited as
// net.denied; the others reach h with their client address in the context,
// for the per-principal allowlists.
func (a *App) guard(listener string, allow netallow.List, h http.Handler, deny func(http.ResponseWriter, *http.Request, error)) http.Handler {
	g := &netallow.Guard{Listener: listener, Allow: allow, TrustedProxies: a.cfg.Network.proxies,
		Deny: func(w http.ResponseWriter, r *http.Request, client netip.Addr, err error) {
			a.auditDenied(r.Context(), listener, client, r.RemoteAddr, map[string]any{"method": r.Method, "path": r.URL.Path})
			deny(w, r, err)
		}}
	return g.Wrap(h)
}

// restGuard is the REST catalog listener's guard: refusals are Iceberg
// ErrorModel 403s.
func (a *App) restGuard(h http.Handler) http.Handler {
	return a.guard("rest", a.cfg.Network.rest, h, func(w http.ResponseWriter, r *http.Request, err error) {
		httperr.Write(w, r, a.log, "", err)
	})
}

// s3Guard is the S3 endpoint's guard: refusals are S3 XML AccessDenied.
func (a *App) s3Guard(h http.Handler) http.Handler {
	return a.guard("s3", a.cfg.Network.s3, h, a.s3.WriteError)
}

// sqlCheckClient is the SQL endpoint's listener allowlist, checked before
// the password exchange.
func (a *App) sqlCheckClient(ctx context.Context, client netip.Addr) error {
	if a.cfg.Network.sql.Contains(client) {
		return nil
	}
	a.auditDenied(ctx, "sql", client, client.String(), nil)
	return netallow.DeniedListener(client, "sql")
}

// auditDenied records a connection or request refused by a listener's
// allowlist.
func (a *App) auditDenied(ctx context.Context, listener string, client netip.Addr, peer string, detail map[string]any) {
	if detail == nil {
		detail = map[string]any{}
	}
	detail["listener"] = listener
	a.metrics.NetworkDenied(listener)
	if host, _, err := net.SplitHostPort(peer); err == nil {
		peer = host
	}
	if peer != client.String() {
		detail["peer"] = peer // the proxy the request came through
	}
	record, suppressed := a.cfg.Network.denied.take(listener)
	if !record {
		a.log.DebugContext(ctx, "network allowlist refused a client (audit budget spent)", "listener", listener, "client_addr", client.String())
		return
	}
	if suppressed > 0 {
		detail["suppressed"] = suppressed
	}
	a.log.InfoContext(ctx, "network allowlist refused a client", "listener", listener, "client_addr", client.String())
	a.events.Record(context.WithoutCancel(ctx), audit.Event{ClientAddr: client.String(), Action: "net.denied",
		Resource: "listener:" + listener, Outcome: audit.OutcomeDenied, Detail: detail})
}
