package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	floe "github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/internal/tlsconf"
	"github.com/floe-lake/floe/oauth"
	"github.com/floe-lake/floe/objstore/s3api"
	"github.com/floe-lake/floe/vend"
)

// HSTSHeader is the Strict-Transport-Security value of HTTPS responses of
// the REST catalog listener: one year, no subdomains (Floe does not own
// the host's other names).
const HSTSHeader = "max-age=31536000"

// tlsState is the TLS configuration of the node's listeners.
type tlsState struct {
	// rest, s3 and sql are nil for a plaintext listener.
	rest, s3, sql *tls.Config
	// local is the CA of --tls-self-signed (nil otherwise).
	local *tlsconf.Local
	// principals maps client certificates to principal names.
	principals tlsconf.PrincipalMap
	// tokens are the access tokens of certificate-authenticated callers.
	tokens *certTokens
}

// loadTLSEnv merges the FLOE_*TLS* variables of the TLS settings.
func (c *Config) loadTLSEnv(getenv func(string) string) error {
	for name, dst := range map[string]*string{"FLOE_TLS_CERT": &c.TLSCert, "FLOE_TLS_KEY": &c.TLSKey,
		"FLOE_REST_TLS_CERT": &c.RESTTLSCert, "FLOE_REST_TLS_KEY": &c.RESTTLSKey, "FLOE_S3_TLS_CERT": &c.S3TLSCert,
		"FLOE_S3_TLS_KEY": &c.S3TLSKey, "FLOE_TLS_CLIENT_CA": &c.TLSClientCA,
		"FLOE_REST_TLS_CLIENT_AUTH": &c.RESTTLSClientAuth, "FLOE_S3_TLS_CLIENT_AUTH": &c.S3TLSClientAuth} {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
	if v := getenv("FLOE_TLS_SELF_SIGNED"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("FLOE_TLS_SELF_SIGNED: %w", err)
		}
		c.TLSSelfSigned = b
	}
	if v := getenv("FLOE_TLS_CLIENT_PRINCIPALS"); v != "" {
		m := map[string]string{}
		for item := range strings.SplitSeq(v, ",") {
			i := strings.LastIndex(item, "=")
			if i < 0 {
				return fmt.Errorf("FLOE_TLS_CLIENT_PRINCIPALS: %q: want <cn:name or uri:URI>=<principal>", item)
			}
			m[strings.TrimSpace(item[:i])] = strings.TrimSpace(item[i+1:])
		}
		c.TLSClientPrincipals = m
	}
	return nil
}

// finishTLS checks the TLS settings.
func (c *Config) finishTLS() error {
	for _, p := range []struct{ name, cert, key string }{{"tls", c.TLSCert, c.TLSKey},
		{"rest_tls", c.RESTTLSCert, c.RESTTLSKey}, {"s3_tls", c.S3TLSCert, c.S3TLSKey}} {
		if (p.cert == "") != (p.key == "") {
			return fmt.Errorf("%s_cert and %s_key must be set together", p.name, p.name)
		}
	}
	if c.TLSSelfSigned && c.TLSCert != "" {
		return errors.New("tls_self_signed and tls_cert: set one (the self-signed certificate replaces tls_cert)")
	}
	for _, l := range []struct {
		name, policy string
		tls          bool
	}{{"rest_tls_client_auth", c.RESTTLSClientAuth, c.restTLS()}, {"s3_tls_client_auth", c.S3TLSClientAuth, c.s3TLS()}} {
		p, err := tlsconf.ParseClientAuth(l.policy)
		if err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
		}
		if p == tlsconf.ClientAuthOff {
			continue
		}
		if !l.tls {
			return fmt.Errorf("%s %s: the listener has no TLS certificate (tls_cert or tls_self_signed)", l.name, p)
		}
		if c.TLSClientCA == "" {
			return fmt.Errorf("%s %s: needs tls_client_ca, the CA that issues client certificates", l.name, p)
		}
	}
	return tlsconf.PrincipalMap(c.TLSClientPrincipals).Validate()
}

// restTLS, s3TLS and sqlTLS report whether a listener serves TLS.
func (c Config) restTLS() bool { return c.TLSSelfSigned || c.TLSCert != "" || c.RESTTLSCert != "" }
func (c Config) s3TLS() bool   { return c.TLSSelfSigned || c.TLSCert != "" || c.S3TLSCert != "" }

// selfSignedHosts are the names the --tls-self-signed certificate carries:
// loopback, the machine's hostname, and the hosts of the listen addresses
// and public URLs.
func (c Config) selfSignedHosts() []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	for _, addr := range []string{c.Listen, c.S3Listen, c.SQLListen} {
		if h, _, err := net.SplitHostPort(addr); err == nil && h != "" {
			if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
				hosts = append(hosts, h)
			}
		}
	}
	for _, u := range []string{c.PublicURL, c.S3PublicURL} {
		if pu, err := url.Parse(u); err == nil && pu.Hostname() != "" {
			hosts = append(hosts, pu.Hostname())
		}
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

// setupTLS loads the certificates of the listeners (making the local CA
// with --tls-self-signed) and the client certificate settings.
func (a *App) setupTLS() error {
	cfg := a.cfg
	var self *tlsconf.Local
	if cfg.TLSSelfSigned {
		l, err := tlsconf.SelfSigned(filepath.Join(cfg.DataDir, "tls"), cfg.selfSignedHosts())
		if err != nil {
			return err
		}
		self = &l
		a.log.Info("serving a self-signed certificate (--tls-self-signed): for a development machine only", "ca", l.CAFile)
	}
	reloaders := map[[2]string]*tlsconf.Reloader{}
	pick := func(certs ...[2]string) (*tlsconf.Reloader, error) {
		for _, p := range certs {
			if p[0] == "" {
				continue
			}
			if r, ok := reloaders[p]; ok {
				return r, nil
			}
			r, err := tlsconf.NewReloader(p[0], p[1], a.log)
			if err != nil {
				return nil, err
			}
			reloaders[p] = r
			return r, nil
		}
		return nil, nil
	}
	shared := [2]string{cfg.TLSCert, cfg.TLSKey}
	if self != nil {
		shared = [2]string{self.CertFile, self.KeyFile}
	}
	var pool *x509.CertPool
	if cfg.TLSClientCA != "" {
		var err error
		if pool, err = tlsconf.LoadCAs(cfg.TLSClientCA); err != nil {
			return err
		}
	}
	st := &tlsState{local: self, principals: tlsconf.PrincipalMap(cfg.TLSClientPrincipals)}
	for _, l := range []struct {
		dst    **tls.Config
		own    [2]string
		policy string
		alpn   []string
		on     bool
	}{
		{&st.rest, [2]string{cfg.RESTTLSCert, cfg.RESTTLSKey}, cfg.RESTTLSClientAuth, []string{"http/1.1"}, true},
		{&st.s3, [2]string{cfg.S3TLSCert, cfg.S3TLSKey}, cfg.S3TLSClientAuth, []string{"http/1.1"}, cfg.S3Listen != "off"},
		{&st.sql, [2]string{cfg.SQLTLSCert, cfg.SQLTLSKey}, "", nil, cfg.sqlEnabled()},
	} {
		if !l.on {
			continue
		}
		r, err := pick(l.own, shared)
		if err != nil {
			return err
		}
		if r == nil {
			continue
		}
		policy, _ := tlsconf.ParseClientAuth(l.policy) // checked in Finish
		if *l.dst, err = tlsconf.Server(r, policy, pool, l.alpn); err != nil {
			return err
		}
	}
	if len(st.principals) > 0 {
		distinct := map[string]bool{}
		for _, p := range st.principals {
			distinct[p] = true
		}
		st.tokens = &certTokens{a: a, max: len(distinct), tokens: map[string]certToken{}}
	}
	for _, u := range []struct {
		name, url string
		tls       bool
	}{{"public_url", cfg.PublicURL, st.rest != nil}, {"s3_public_url", cfg.S3PublicURL, st.s3 != nil}} {
		if u.tls && strings.HasPrefix(u.url, "http://") {
			a.log.Warn(u.name+" is http:// but its listener serves TLS: clients are handed a URL that does not work", "url", u.url)
		}
	}
	a.tls = st
	return nil
}

// TLSCAFile is the CA certificate of --tls-self-signed ("" without it).
func (a *App) TLSCAFile() string {
	if a.tls == nil || a.tls.local == nil {
		return ""
	}
	return a.tls.local.CAFile
}

// TLSRoots returns a pool with the CA of --tls-self-signed (nil without it),
// for in-process clients such as the demo loader.
func (a *App) TLSRoots() (*x509.CertPool, error) {
	if f := a.TLSCAFile(); f != "" {
		return tlsconf.LoadCAs(f)
	}
	return nil, nil
}

// TLSCACreated reports whether this start made the --tls-self-signed CA.
func (a *App) TLSCACreated() bool { return a.tls != nil && a.tls.local != nil && a.tls.local.Created }

// SQLTLS reports whether the SQL endpoint offers TLS.
func (a *App) SQLTLS() bool { return a.tls != nil && a.tls.sql != nil }

// scheme is "https" for a TLS listener, else "http".
func scheme(c *tls.Config) string {
	if c != nil {
		return "https"
	}
	return "http"
}

// serve serves srv on ln, over TLS when c is set.
func serveOn(srv interface {
	Serve(net.Listener) error
	ServeTLS(net.Listener, *tls.Config) error
}, ln net.Listener, c *tls.Config) error {
	if c == nil {
		return srv.Serve(ln)
	}
	return srv.ServeTLS(ln, c)
}

// clientCertAuth reports whether a listener verifies client certificates.
func clientCertAuth(c *tls.Config) bool { return c != nil && c.ClientAuth != tls.NoClientCert }

// peerCert is the verified client certificate of r, or nil.
func peerCert(r *http.Request) *x509.Certificate {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.PeerCertificates) == 0 {
		return nil
	}
	return r.TLS.PeerCertificates[0]
}

// restTLSHandler adds HSTS to the REST listener's HTTPS responses and
// authenticates callers by client certificate (see docs/security.md, "TLS").
func (a *App) restTLSHandler(h http.Handler) http.Handler {
	if a.tls.rest == nil {
		return h
	}
	mtls := clientCertAuth(a.tls.rest)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strict-Transport-Security", HSTSHeader)
		if cert := peerCert(r); mtls && cert != nil && !oauth.Routes(r.URL.Path) {
			var err error
			if r, err = a.certCaller(r, cert); err != nil {
				httperr.Write(w, r, a.log, "", err)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// certPrincipal maps cert to a principal name, auditing a refusal.
func (a *App) certPrincipal(r *http.Request, cert *x509.Certificate, listener string) (string, error) {
	name, err := a.tls.principals.Principal(cert)
	if err == nil {
		return name, nil
	}
	a.events.Record(r.Context(), audit.Event{ClientAddr: httperr.ClientAddr(r), Action: "auth.client_certificate",
		Resource: "listener:" + listener, Outcome: audit.OutcomeUnauthenticated,
		Detail: map[string]any{"identities": strings.Join(tlsconf.Identities(cert), ", "), "issuer": cert.Issuer.String(),
			"serial": hex.EncodeToString(cert.SerialNumber.Bytes()), "error": err.Error()}})
	return "", floe.Wrap(floe.Unauthenticated, err, "client certificate %s is not mapped to a principal (tls_client_principals)",
		strings.Join(tlsconf.Identities(cert), ", "))
}

// certCaller returns r authenticated as the principal cert maps to: with
// no bearer token, a token of that principal is attached; a bearer token
// of another principal is refused.
func (a *App) certCaller(r *http.Request, cert *x509.Certificate) (*http.Request, error) {
	name, err := a.certPrincipal(r, cert, "rest")
	if err != nil {
		return r, err
	}
	if tok, ok := httperr.Bearer(r); ok {
		// A token that does not verify claims nothing: the certificate
		// alone authenticates (PyIceberg without a credential sends
		// "Bearer None"). A valid token must be of the same principal.
		if claims, err := a.auth.Verify(r.Context(), tok); err == nil && claims.Principal == name {
			return r, nil
		} else if err == nil {
			a.events.Record(r.Context(), audit.Event{ClientAddr: httperr.ClientAddr(r), Principal: claims.Principal,
				Action: "auth.client_certificate", Resource: "listener:rest", Outcome: audit.OutcomeDenied,
				Detail: map[string]any{"identities": strings.Join(tlsconf.Identities(cert), ", "), "certificate_principal": name}})
			return r, floe.E(floe.Forbidden, "token", "the access token is of principal %q but the client certificate maps to %q", claims.Principal, name)
		}
	}
	tok, err := a.tls.tokens.get(r.Context(), name)
	if err != nil {
		return r, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return r, nil
}

// certTokens caches one access token per certificate-mapped principal,
// renewed at half its lifetime. It holds at most one entry per key of
// tls_client_principals (the only names it is asked for).
type certTokens struct {
	a *App
	// max bounds tokens: the number of distinct principals in the map.
	max    int
	mu     sync.Mutex
	tokens map[string]certToken
}

type certToken struct {
	token   string
	renewAt time.Time
}

// get returns a token for principal name.
func (c *certTokens) get(ctx context.Context, name string) (string, error) {
	c.mu.Lock()
	t, ok := c.tokens[name]
	c.mu.Unlock()
	if ok && time.Now().Before(t.renewAt) {
		return t.token, nil
	}
	p, err := c.a.store.PrincipalByName(ctx, name)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return "", floe.E(floe.Unauthenticated, "client certificate", "the client certificate maps to principal %q, which does not exist", name)
		}
		return "", fmt.Errorf("client certificate principal: %w", err)
	}
	if p.Disabled {
		return "", floe.E(floe.Unauthenticated, "client certificate", "the client certificate maps to principal %q, which is disabled", name)
	}
	tok, err := c.a.auth.Issue(ctx, p, p.Scopes)
	if err != nil {
		return "", fmt.Errorf("client certificate token: %w", err)
	}
	c.mu.Lock()
	if _, ok := c.tokens[name]; !ok && len(c.tokens) >= c.max {
		clear(c.tokens) // cannot happen while names come from the map; a hard bound all the same
	}
	c.tokens[name] = certToken{token: tok.AccessToken, renewAt: time.Now().Add(time.Duration(tok.ExpiresIn) * time.Second / 2)}
	c.mu.Unlock()
	return tok.AccessToken, nil
}

// certPrincipalKey carries the principal an S3 request's client
// certificate maps to.
type certPrincipalKey struct{}

// s3TLSHandler maps the S3 listener's client certificates to principals:
// an unmapped one is refused; a mapped one must match the principal of the
// request's SigV4 credential (certResolver).
func (a *App) s3TLSHandler(h http.Handler) http.Handler {
	if !clientCertAuth(a.tls.s3) {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cert := peerCert(r); cert != nil {
			name, err := a.certPrincipal(r, cert, "s3")
			if err != nil {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusForbidden)
				_, _ = fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>%s</Message></Error>",
					xmlEscape(floe.PublicMessage(err)))
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), certPrincipalKey{}, name))
		}
		h.ServeHTTP(w, r)
	})
}

// certResolver refuses a credential whose principal is not the one the
// request's client certificate maps to.
type certResolver struct{ s3api.Resolver }

// Resolve resolves the credential, then compares principals.
func (c certResolver) Resolve(ctx context.Context, accessKeyID, sessionToken string) (vend.Session, string, error) {
	s, secret, err := c.Resolver.Resolve(ctx, accessKeyID, sessionToken)
	if err != nil {
		return s, secret, err
	}
	if name, ok := ctx.Value(certPrincipalKey{}).(string); ok && name != s.Principal {
		return vend.Session{}, "", floe.E(floe.Forbidden, "credential",
			"the credential was vended to principal %q but the client certificate maps to %q", s.Principal, name)
	}
	return s, secret, nil
}

// s3Resolver wraps r with the client certificate check when the S3
// listener verifies client certificates.
func (a *App) s3Resolver(r s3api.Resolver) s3api.Resolver {
	if r == nil || a.tls == nil || !clientCertAuth(a.tls.s3) {
		return r
	}
	return certResolver{r}
}

var xmlReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

func xmlEscape(s string) string { return xmlReplacer.Replace(s) }
