// Package check is Floe's readiness validator: the seed's design
// validation checklist (standards S1–S7) run as real calls against a
// running Iceberg REST catalog, Floe or any other. Each check returns
// findings with a status, the evidence it saw and, for a warning or a
// failure, the one-sentence fix of the troubleshooting table (Hints).
//
// Everything is spec-conformant Iceberg REST, OAuth2 (RFC 6749, RFC 8693)
// and S3; only when the server is detected to be Floe (its management API
// answers /api/v1/whoami) does the check add evidence from Floe's
// management API (maintenance policy).
package check

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Status is a finding's outcome.
type Status string

// The statuses of a finding.
const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Finding is the outcome of one check.
type Finding struct {
	// Standard is the seed standard checked, S1 to S7.
	Standard string `json:"standard"`
	// ID names the check, e.g. "s4.vended-credentials"; it keys Hints.
	ID string `json:"id"`
	// Status is pass, warn, fail or skip.
	Status Status `json:"status"`
	// Evidence is what the check saw (for a skip: the reason).
	Evidence string `json:"evidence"`
	// Fix is the one-sentence fix of a warning or failure ("" otherwise).
	Fix string `json:"fix,omitempty"`
}

// Report is the outcome of a run.
type Report struct {
	// URL is the catalog checked.
	URL string `json:"url"`
	// Warehouse is the warehouse asked for ("" for the server's default).
	Warehouse string `json:"warehouse,omitempty"`
	// Prefix is the REST prefix the catalog's config answered.
	Prefix string `json:"prefix,omitempty"`
	// Floe reports whether the server was detected to be Floe.
	Floe bool `json:"floe"`
	// Findings are in the order the checks ran.
	Findings []Finding `json:"findings"`
	// Duration is how long the run took.
	Duration time.Duration `json:"duration_ns"`
}

// Failed reports whether any finding failed.
func (r *Report) Failed() bool {
	for _, f := range r.Findings {
		if f.Status == Fail {
			return true
		}
	}
	return false
}

// Find returns the finding with the given id.
func (r *Report) Find(id string) (Finding, bool) {
	for _, f := range r.Findings {
		if f.ID == id {
			return f, true
		}
	}
	return Finding{}, false
}

// Options configures a run.
type Options struct {
	// URL is the catalog's base URI (the checks append /v1/...). Required.
	URL string
	// Warehouse is sent as ?warehouse= to GET /v1/config ("" for none).
	Warehouse string
	// Credential is "client_id:client_secret" for OAuth2 client credentials.
	Credential string
	// Token is a bearer token used instead of Credential.
	Token string
	// TokenURL overrides the token endpoint (default: the config's
	// oauth2-server-uri, else <URL>/v1/oauth/tokens).
	TokenURL string
	// FederationCredential and FederationToken, when set, are the identity
	// a federating engine uses: the S7 checks run as it.
	FederationCredential, FederationToken string
	// Tables lists tables (dotted namespace.name) to sample first; the
	// rest of the sample is discovered by listing.
	Tables []string
	// SampleTables bounds the tables sampled (default 5).
	SampleTables int
	// HTTPClient sends catalog and token requests (default: 30 s timeout,
	// no redirects followed).
	HTTPClient *http.Client
	// S3HTTPClient sends object-store requests with vended credentials
	// (default: HTTPClient).
	S3HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives debug lines (default: discard).
	Logger *slog.Logger
}

// ErrUsage marks an invalid Options.
var ErrUsage = errors.New("usage")

// ErrConnect marks a catalog that could not be reached or did not answer
// like an Iceberg REST catalog at all.
var ErrConnect = errors.New("cannot reach the catalog")

// DefaultSampleTables is the default of Options.SampleTables.
const DefaultSampleTables = 5

// Run runs every check against the catalog. It returns an error wrapping
// ErrUsage or ErrConnect when no check could run; otherwise failures are
// findings.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.URL == "" || (!strings.HasPrefix(o.URL, "http://") && !strings.HasPrefix(o.URL, "https://")) {
		return nil, fmt.Errorf("%w: --url must be an http(s) URL, got %q", ErrUsage, o.URL)
	}
	if o.Credential != "" {
		if id, _, ok := strings.Cut(o.Credential, ":"); !ok || id == "" {
			return nil, fmt.Errorf("%w: --credential must be client_id:client_secret", ErrUsage)
		}
	}
	if o.FederationCredential != "" {
		if id, _, ok := strings.Cut(o.FederationCredential, ":"); !ok || id == "" {
			return nil, fmt.Errorf("%w: --federation-credential must be client_id:client_secret", ErrUsage)
		}
	}
	if o.SampleTables <= 0 {
		o.SampleTables = DefaultSampleTables
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.S3HTTPClient == nil {
		o.S3HTTPClient = o.HTTPClient
	}
	start := o.Now()
	r := &run{o: o, base: strings.TrimSuffix(o.URL, "/"), rep: &Report{URL: o.URL, Warehouse: o.Warehouse}}
	if err := r.reachable(ctx); err != nil {
		return nil, err
	}
	for _, c := range r.checks() {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("check interrupted: %w", err)
		}
		c(ctx)
	}
	r.rep.Duration = o.Now().Sub(start)
	return r.rep, nil
}

// checks lists the checks in the order they run; later ones use what
// earlier ones learnt (token, prefix, sampled tables).
func (r *run) checks() []func(context.Context) {
	return []func(context.Context){
		r.checkClientCredentials, // S3: a token first, every other call needs it
		r.checkTokenLifetime,
		r.checkTokenExchange,
		r.checkConfig, // S2
		r.detectFloe,
		r.checkNamespaces,
		r.checkLoadTable,
		r.checkFederationURI,
		r.checkCurrentMetadata, // S1
		r.checkVending,         // S4
		r.checkCredentialLifetime,
		r.checkScoped,
		r.checkReadOnly,
		r.checkViews,        // S5
		r.checkPartitioning, // S6
		r.checkSmallFiles,
		r.checkSnapshots,
		r.checkCompaction,
		r.checkEncryption,
		r.checkLifecycle,
		r.checkDescribe, // S7
	}
}

// add records a finding; a warning or failure gets its fix from Hints.
func (r *run) add(std, id string, st Status, format string, args ...any) {
	f := Finding{Standard: std, ID: id, Status: st, Evidence: fmt.Sprintf(format, args...)}
	if st == Warn || st == Fail {
		f.Fix = Hints[id]
	}
	r.rep.Findings = append(r.rep.Findings, f)
}
