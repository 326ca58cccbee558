// Package tlsconf builds the TLS configuration of Floe's listeners: a
// certificate that is re-read when its files change, secure defaults (TLS
// 1.2 or later, AEAD cipher suites with forward secrecy), optional client
// certificates checked against a configured CA and mapped to principals,
// and a self-signed local CA for a development machine (SelfSigned).
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// ReloadInterval is how often, at most, a Reloader looks at its files.
const ReloadInterval = time.Second

// Reloader serves a certificate and key from PEM files and re-reads them
// when either file's modification time or size changes, looking at most
// once per ReloadInterval (on a handshake, never in the background). A
// replacement that does not parse is logged and the previous certificate
// stays in use.
type Reloader struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string // modification times and sizes of the files loaded
	checked time.Time
}

// NewReloader loads certFile and keyFile; log may be nil.
func NewReloader(certFile, keyFile string, log *slog.Logger) (*Reloader, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{certFile: certFile, keyFile: keyFile, log: log, now: time.Now}
	stamp, err := r.stampFiles()
	if err != nil {
		return nil, err
	}
	cert, err := r.load()
	if err != nil {
		return nil, err
	}
	r.cert, r.stamp, r.checked = cert, stamp, r.now()
	return r, nil
}

// stampFiles identifies the current version of both files.
func (r *Reloader) stampFiles() (string, error) {
	var b strings.Builder
	for _, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("tls: %w", err)
		}
		fmt.Fprintf(&b, "%d/%d;", fi.ModTime().UnixNano(), fi.Size())
	}
	return b.String(), nil
}

func (r *Reloader) load() (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: load %s and %s: %w", r.certFile, r.keyFile, err)
	}
	return &cert, nil
}

// GetCertificate returns the current certificate (tls.Config.GetCertificate).
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.Current(), nil
}

// Current returns the certificate, re-reading the files first if they
// changed and ReloadInterval has passed since they were last looked at.
func (r *Reloader) Current() *tls.Certificate {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(r.checked) < ReloadInterval {
		return r.cert
	}
	r.checked = now
	stamp, err := r.stampFiles()
	if err != nil || stamp == r.stamp {
		if err != nil {
			r.log.Warn("tls: cannot look at the certificate files; serving the loaded certificate", "err", err)
		}
		return r.cert
	}
	cert, err := r.load()
	if err != nil {
		// Half-written files (certificate replaced before the key) are
		// retried on the next look, since the stamp is not taken.
		r.log.Warn("tls: the certificate files changed but do not load; serving the previous certificate", "err", err)
		return r.cert
	}
	r.cert, r.stamp = cert, stamp
	r.log.Info("tls: certificate reloaded", "cert", r.certFile, "not_after", notAfter(cert))
	return r.cert
}

func notAfter(c *tls.Certificate) string {
	if c.Leaf == nil {
		return ""
	}
	return c.Leaf.NotAfter.UTC().Format(time.RFC3339)
}

// ClientAuth is a listener's policy for client certificates.
type ClientAuth string

// Client certificate policies.
const (
	// ClientAuthOff asks for no client certificate.
	ClientAuthOff ClientAuth = "off"
	// ClientAuthOptional verifies a client certificate if one is sent:
	// one not issued by the client CA fails the handshake.
	ClientAuthOptional ClientAuth = "optional"
	// ClientAuthRequire fails the handshake without a client certificate
	// issued by the client CA.
	ClientAuthRequire ClientAuth = "require"
)

// ParseClientAuth parses "off" (or ""), "optional" or "require".
func ParseClientAuth(s string) (ClientAuth, error) {
	switch ClientAuth(s) {
	case "", ClientAuthOff:
		return ClientAuthOff, nil
	case ClientAuthOptional, ClientAuthRequire:
		return ClientAuth(s), nil
	}
	return "", fmt.Errorf("client certificate policy %q: must be off, optional or require", s)
}

// secureCipherSuites are the TLS 1.2 suites offered: ECDHE key exchange
// (forward secrecy) with AEAD ciphers only. TLS 1.3 suites are not
// configurable and are all secure.
var secureCipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// Server returns a server configuration serving r's certificate with
// Floe's defaults: TLS 1.2 or later, ECDHE with AEAD ciphers. With a
// policy other than off, client certificates are verified against
// clientCAs (which must then be set). nextProtos is the ALPN list (nil:
// none).
func Server(r *Reloader, auth ClientAuth, clientCAs *x509.CertPool, nextProtos []string) (*tls.Config, error) {
	cfg := &tls.Config{
		GetCertificate: r.GetCertificate,
		MinVersion:     tls.VersionTLS12,
		CipherSuites:   secureCipherSuites,
		NextProtos:     nextProtos,
	}
	switch auth {
	case "", ClientAuthOff:
	case ClientAuthOptional, ClientAuthRequire:
		if clientCAs == nil {
			return nil, errors.New("tls: client certificates need a client CA (tls_client_ca)")
		}
		cfg.ClientCAs = clientCAs
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if auth == ClientAuthRequire {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	default:
		return nil, fmt.Errorf("tls: unknown client certificate policy %q", auth)
	}
	return cfg, nil
}

// LoadCAs reads a PEM file of one or more CA certificates.
func LoadCAs(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tls: client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("tls: client CA %s: no PEM certificate in it", file)
	}
	return pool, nil
}

// Identities names a client certificate as the principal mapping keys it:
// "cn:<subject common name>" and "uri:<URI SAN>" for each URI in its
// subject alternative names.
func Identities(c *x509.Certificate) []string {
	var ids []string
	if c.Subject.CommonName != "" {
		ids = append(ids, "cn:"+c.Subject.CommonName)
	}
	for _, u := range c.URIs {
		ids = append(ids, "uri:"+u.String())
	}
	return ids
}

// PrincipalMap maps client certificate identities (see Identities) to
// principal names.
type PrincipalMap map[string]string

// ErrUnmapped is returned for a verified client certificate that no entry
// of the map names, or that names more than one principal.
var ErrUnmapped = errors.New("client certificate is not mapped to a principal")

// Principal returns the principal a verified client certificate maps to.
// Every identity of the certificate that the map names must name the same
// principal.
func (m PrincipalMap) Principal(c *x509.Certificate) (string, error) {
	ids := Identities(c)
	var found []string
	for _, id := range ids {
		if p, ok := m[id]; ok && !slices.Contains(found, p) {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("%w (identities %s)", ErrUnmapped, strings.Join(ids, ", "))
	}
	sort.Strings(found)
	return "", fmt.Errorf("%w: its identities %s name several principals (%s)", ErrUnmapped,
		strings.Join(ids, ", "), strings.Join(found, ", "))
}

// Validate checks every key is "cn:..." or "uri:..." with a principal name.
func (m PrincipalMap) Validate() error {
	for k, v := range m {
		kind, val, ok := strings.Cut(k, ":")
		if !ok || (kind != "cn" && kind != "uri") || val == "" || v == "" {
			return fmt.Errorf("tls_client_principals %q: %q: keys are cn:<common name> or uri:<URI SAN>, values principal names", k, v)
		}
	}
	return nil
}
