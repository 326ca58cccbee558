// Package remote is Floe's client of a remote Iceberg REST catalog: the
// read side of a federated (foreign) catalog. It lists and loads
// namespaces, tables and views from the remote in place, authenticates
// with a static bearer token, OAuth2 client credentials or AWS SigV4
// (AWS Glue's Iceberg REST endpoint), keeps a bounded
// metadata cache with ETag revalidation, and maps every remote failure to
// a Floe domain error that names the foreign catalog and never carries a
// secret.
package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Defaults of Options.
const (
	DefaultTimeout       = 10 * time.Second
	DefaultCacheTTL      = 30 * time.Second
	DefaultMaxCacheBytes = 64 << 20
	DefaultMaxListPages  = 100
	// DefaultTokenLifetime is how long an OAuth2 token without expires_in is used.
	DefaultTokenLifetime = 10 * time.Minute

	maxTableBody = 64 << 20 // loadTable responses
	maxBody      = 8 << 20  // every other response
	maxMessage   = 300      // characters of a remote error message kept
)

// Auth is how Floe authenticates to the remote catalog.
type Auth struct {
	// Kind is "none", "bearer", "oauth2" or "sigv4".
	Kind string
	// Token is the static token of Kind "bearer".
	Token string
	// ClientID, ClientSecret, Scope and TokenURL configure OAuth2 client
	// credentials (RFC 6749 4.4) at TokenURL (default <URI>/v1/oauth/tokens),
	// client_secret_post form, optional Scope (default "catalog"). The token
	// is renewed when 60% of its expires_in has passed (and on a 401 once);
	// without expires_in, every 10 min.
	ClientID, ClientSecret, Scope, TokenURL string
	// Region (required) and SigningName (default "glue") configure Kind
	// "sigv4": every request is signed with AWS Signature Version 4
	// (aws-sdk-go-v2's signer). Credentials come from AWSCredentials or
	// else the AWS default chain (environment, shared profile, web
	// identity, container or instance role); with RoleARN, an AssumeRole
	// (with ExternalID when set) on top of them. They are cached by an
	// aws.CredentialsCache and, when the remote says they expired,
	// refreshed and the request re-signed once.
	Region, SigningName, RoleARN, ExternalID string
	// AWSCredentials replaces the AWS default chain for Kind "sigv4" (may be nil).
	AWSCredentials aws.CredentialsProvider
}

// Options configures a Client.
type Options struct {
	// Name is the foreign catalog's name in Floe, used in errors and audit calls.
	Name string
	// URI is the remote catalog's base URI (the client appends /v1/...).
	URI string
	// Warehouse is sent as ?warehouse= to GET /v1/config; the prefix comes
	// from its overrides (then defaults).
	Warehouse string
	// Auth is how Floe authenticates to the remote.
	Auth Auth
	// HTTPClient sends the requests; nil: one with a 10 s timeout, sane
	// transport limits and no redirects followed.
	HTTPClient *http.Client
	// CacheTTL is the metadata cache lifetime (default 30 s; negative: no cache).
	CacheTTL time.Duration
	// MaxCacheBytes bounds the cache (default 64 MiB; negative: no cache), LRU.
	MaxCacheBytes int64
	// MaxListPages bounds the pages followed by list calls (default 100).
	MaxListPages int
	// Audit is called once per remote HTTP request (may be nil).
	Audit func(ctx context.Context, c Call)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Header holds extra headers sent on every request (may be nil).
	Header http.Header
	// Logger receives debug lines about token renewal and cache (default: discard).
	Logger *slog.Logger
	// Identity names the client's identity in audit calls ("read" or
	// "write" when a foreign catalog has one of each; may be "").
	Identity string
}

// Call describes one remote request for the audit log: never a secret.
type Call struct {
	Catalog, Operation, Method, Path string
	// Identity is Options.Identity: which of the catalog's identities
	// made the call.
	Identity string
	// Status is the HTTP status, 0 when no response arrived.
	Status int
	// Latency is the time from sending the request to reading the body.
	Latency time.Duration
	// Err is "" on success, else the public message of the failure.
	Err string
}

// LoadTableResult is the remote's LoadTableResult, passed through.
// Metadata is shared with the cache: callers must not modify it.
type LoadTableResult struct {
	MetadataLocation string
	// Metadata is the remote table metadata, as sent.
	Metadata json.RawMessage
	// Config is the remote's table config (may hold credentials).
	Config map[string]string
	// StorageCredentials are the remote's storage-credentials, as sent.
	StorageCredentials []StorageCredential
	// ETag is the remote's ETag of the answer ("" when it sent none).
	ETag string
}

// StorageCredential is one entry of a LoadTableResult's storage-credentials:
// the config applies to locations under Prefix.
type StorageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

// LoadViewResult is the remote's LoadViewResult, passed through.
// Metadata is shared with the cache: callers must not modify it.
type LoadViewResult struct {
	MetadataLocation string
	Metadata         json.RawMessage
	Config           map[string]string
}

// Ident is a remote table or view name.
type Ident struct {
	Namespace []string
	Name      string
}

// String renders the identifier as dotted parts.
func (i Ident) String() string {
	return nsString(append(append([]string(nil), i.Namespace...), i.Name))
}

// Client is a client of one remote Iceberg REST catalog. It is safe for
// concurrent use.
type Client struct {
	o        Options
	base     string // URI without a trailing slash
	tokenURL string
	hc       *http.Client
	ownHC    bool
	log      *slog.Logger
	cache    *cache // nil: no cache
	tok      tokenSource
	sig      *sigv4Auth // Kind "sigv4"

	mu         sync.Mutex
	prefix     string
	prefixAt   time.Time
	havePrefix bool
}

// New validates o and returns a Client. It does not touch the network.
func New(o Options) (*Client, error) {
	if strings.TrimSpace(o.Name) == "" {
		return nil, fmt.Errorf("remote catalog: name is required")
	}
	u, err := url.Parse(o.URI)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("foreign catalog %s: uri must be an absolute http(s) URL without credentials, query or fragment", o.Name)
	}
	c := &Client{o: o, base: strings.TrimSuffix(o.URI, "/"), hc: o.HTTPClient, log: o.Logger}
	switch o.Auth.Kind {
	case "none", "":
		c.o.Auth.Kind = "none"
	case "bearer":
		if o.Auth.Token == "" {
			return nil, fmt.Errorf("foreign catalog %s: bearer auth needs a token", o.Name)
		}
	case "oauth2":
		if o.Auth.ClientID == "" || o.Auth.ClientSecret == "" {
			return nil, fmt.Errorf("foreign catalog %s: oauth2 auth needs a client id and secret", o.Name)
		}
		c.tokenURL = c.base + "/v1/oauth/tokens"
		if o.Auth.TokenURL != "" {
			tu, err := url.Parse(o.Auth.TokenURL)
			if err != nil || (tu.Scheme != "http" && tu.Scheme != "https") || tu.Host == "" || tu.User != nil {
				return nil, fmt.Errorf("foreign catalog %s: token url must be an absolute http(s) URL without credentials", o.Name)
			}
			c.tokenURL = o.Auth.TokenURL
		}
		if c.o.Auth.Scope == "" {
			c.o.Auth.Scope = "catalog"
		}
	case "sigv4":
		if c.sig, err = newSigV4(o); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("foreign catalog %s: unknown auth kind %q (want none, bearer, oauth2 or sigv4)", o.Name, o.Auth.Kind)
	}
	if c.o.Now == nil {
		c.o.Now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.o.CacheTTL == 0 {
		c.o.CacheTTL = DefaultCacheTTL
	}
	if c.o.MaxCacheBytes == 0 {
		c.o.MaxCacheBytes = DefaultMaxCacheBytes
	}
	if c.o.MaxListPages <= 0 {
		c.o.MaxListPages = DefaultMaxListPages
	}
	if c.o.CacheTTL > 0 && c.o.MaxCacheBytes > 0 {
		c.cache = newCache(c.o.MaxCacheBytes)
	}
	if c.hc == nil {
		c.hc = defaultHTTPClient()
		c.ownHC = true
	}
	c.tok.sem = make(chan struct{}, 1)
	return c, nil
}

func defaultHTTPClient() *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{
		Timeout: DefaultTimeout,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           d.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          64,
			MaxIdleConnsPerHost:   16,
			MaxConnsPerHost:       64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: DefaultTimeout,
			ExpectContinueTimeout: time.Second,
		},
		// A redirect could carry the catalog's Authorization elsewhere:
		// none is followed, a 3xx is an unexpected answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Close drops the cache and the idle connections of the client's own
// transport. The Client must not be used afterwards.
func (c *Client) Close() {
	if c.cache != nil {
		c.cache.clear()
	}
	if c.ownHC {
		c.hc.CloseIdleConnections()
	}
}

func nsString(parts []string) string { return strings.Join(parts, ".") }
