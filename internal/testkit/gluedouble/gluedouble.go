// Package gluedouble is a test double of AWS Glue's Iceberg REST endpoint,
// for tests only. It verifies every request's SigV4 signature with Floe's
// own sigv4.Verifier (service "glue", one region, known key pairs) and
// refuses a missing, mis-scoped or bad signature with 403 and an
// AWS-shaped error ({"message": ...} and an x-amzn-ErrorType header). It
// speaks Glue's path layout: GET /iceberg/v1/config?warehouse=<account>
// answers the prefix "catalogs/<account>", and every
// /iceberg/v1/catalogs/<account>/... request is proxied to a real Iceberg
// REST catalog (another Floe in the tests) at /v1/<warehouse>/..., with
// that catalog's bearer token, so loads return real metadata and
// credentials vended for the upstream's storage.
package gluedouble

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/sigv4"
)

// AWS's error messages, as Glue's (API Gateway-style) front end answers
// them. See docs/federation.md for which wordings could be checked.
const (
	MsgMissingToken   = "Missing Authentication Token"
	MsgWrongRegion    = "Credential should be scoped to a valid region."
	MsgWrongService   = "Credential should be scoped to correct service: 'glue'."
	MsgBadSignature   = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	MsgUnknownKey     = "The security token included in the request is invalid."
	MsgExpiredToken   = "The security token included in the request is expired"
	MsgSignatureStale = "Signature expired: the request time is too far from the server time."
)

// Service is the SigV4 service name the double accepts.
const Service = "glue"

// Options configures a Double.
type Options struct {
	// Region is the only signing region accepted (e.g. "us-east-1").
	Region string
	// Keys maps access key ids to their secrets.
	Keys map[string]string
	// Expired lists access key ids whose (temporary) credentials the
	// double refuses as expired (ExpiredTokenException).
	Expired map[string]bool
	// Account is the AWS account id: the warehouse of /iceberg/v1/config
	// and the catalog of the prefix catalogs/<account>.
	Account string
	// Upstream is the base URL of the Iceberg REST catalog requests are
	// proxied to; UpstreamWarehouse is its prefix and UpstreamToken its
	// bearer token. Without Upstream every catalog request is 404.
	Upstream, UpstreamWarehouse, UpstreamToken string
	// Now is the double's clock (default time.Now).
	Now func() time.Time
}

// Seen is one request the double answered.
type Seen struct {
	Method, Path, Query string
	// Authorization is the request's Authorization header.
	Authorization string
	// ContentSHA256 is the request's X-Amz-Content-Sha256 header.
	ContentSHA256 string
	// Status is the double's answer; Refusal its error message, if any.
	Status  int
	Refusal string
}

// Double is a Glue-shaped Iceberg REST endpoint. It is an http.Handler.
type Double struct {
	o     Options
	v     *sigv4.Verifier
	proxy *httputil.ReverseProxy

	mu   sync.Mutex
	seen []Seen
}

// New returns a Double for o.
func New(o Options) (*Double, error) {
	if o.Region == "" || o.Account == "" || len(o.Keys) == 0 {
		return nil, errors.New("gluedouble: Region, Account and Keys are required")
	}
	d := &Double{o: o}
	d.v = &sigv4.Verifier{Service: Service, Region: o.Region, Normalize: true, Now: o.Now,
		Lookup: func(_ context.Context, accessKeyID, _ string) (string, error) {
			if o.Expired[accessKeyID] {
				return "", &sigv4.Error{Code: "ExpiredTokenException", Message: MsgExpiredToken, Status: http.StatusForbidden}
			}
			return o.Keys[accessKeyID], nil
		}}
	if o.Upstream != "" {
		up, err := url.Parse(o.Upstream)
		if err != nil {
			return nil, err
		}
		d.proxy = &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
			rest := strings.TrimPrefix(pr.In.URL.EscapedPath(), "/iceberg/v1/catalogs/"+url.PathEscape(o.Account))
			pr.SetURL(up)
			p := strings.TrimSuffix(up.EscapedPath(), "/") + "/v1/" + url.PathEscape(o.UpstreamWarehouse) + rest
			pr.Out.URL.RawPath = p
			pr.Out.URL.Path, _ = url.PathUnescape(p)
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			for k := range pr.Out.Header {
				if strings.HasPrefix(strings.ToLower(k), "x-amz-") {
					pr.Out.Header.Del(k)
				}
			}
			pr.Out.Header.Set("Authorization", "Bearer "+o.UpstreamToken)
		}}
	}
	return d, nil
}

// Start serves a new Double on a loopback port until the test ends.
func Start(t testing.TB, o Options) (*Double, *httptest.Server) {
	t.Helper()
	d, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return d, srv
}

// Seen returns the requests answered so far.
func (d *Double) Seen() []Seen {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Seen(nil), d.seen...)
}

// ServeHTTP implements http.Handler.
func (d *Double) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seen := Seen{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
		Authorization: r.Header.Get("Authorization"), ContentSHA256: r.Header.Get("X-Amz-Content-Sha256")}
	rec := &httperr.StatusRecorder{ResponseWriter: w}
	defer func() {
		seen.Status = rec.Status
		d.mu.Lock()
		d.seen = append(d.seen, seen)
		d.mu.Unlock()
	}()
	if code, msg := d.authenticate(r); code != "" {
		seen.Refusal = msg
		awsError(rec, http.StatusForbidden, code, msg)
		return
	}
	d.route(rec, r)
}

// authenticate verifies r's signature and reads its body (checking it
// against the signed payload hash); it returns AWS's error type and
// message of a refusal, or "" when r is authentic. r.Body is replaced by
// the verified body.
func (d *Double) authenticate(r *http.Request) (code, msg string) {
	authz := r.Header.Get("Authorization")
	if !sigv4.IsSigned(r) {
		return "MissingAuthenticationTokenException", MsgMissingToken
	}
	// The credential scope first, as AWS does, so a mis-scoped request
	// is told which part of the scope is wrong.
	if _, cred, ok := strings.Cut(authz, "Credential="); ok {
		cred, _, _ = strings.Cut(cred, ",")
		parts := strings.Split(strings.TrimSpace(cred), "/")
		if len(parts) == 5 {
			if parts[2] != d.o.Region {
				return "InvalidSignatureException", MsgWrongRegion
			}
			if parts[3] != Service {
				return "InvalidSignatureException", MsgWrongService
			}
		}
	}
	res, err := d.v.Verify(r)
	if err != nil {
		return refusal(err)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		var se *sigv4.Error
		if errors.As(err, &se) {
			return "InvalidSignatureException", MsgBadSignature
		}
		return "IncompleteSignatureException", "The request body could not be read."
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	r.ContentLength = int64(len(body))
	return "", ""
}

// refusal maps a verification failure to AWS's error type and message.
func refusal(err error) (code, msg string) {
	var se *sigv4.Error
	if !errors.As(err, &se) {
		return "InternalFailure", "The request processing has failed because of an unknown error."
	}
	switch se.Code {
	case "SignatureDoesNotMatch", "XAmzContentSHA256Mismatch":
		return "InvalidSignatureException", MsgBadSignature
	case "InvalidAccessKeyId":
		return "UnrecognizedClientException", MsgUnknownKey
	case "ExpiredTokenException":
		return "ExpiredTokenException", MsgExpiredToken
	case "RequestTimeTooSkewed":
		return "InvalidSignatureException", MsgSignatureStale
	case "AccessDenied":
		return "MissingAuthenticationTokenException", MsgMissingToken
	default:
		return "IncompleteSignatureException", se.Message
	}
}

// route serves an authentic request in Glue's layout.
func (d *Double) route(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	catalog := "/iceberg/v1/catalogs/" + url.PathEscape(d.o.Account) + "/"
	switch {
	case p == "/iceberg/v1/config" && r.Method == http.MethodGet:
		if wh := r.URL.Query().Get("warehouse"); wh != "" && wh != d.o.Account {
			icebergError(w, http.StatusNotFound, "EntityNotFoundException", "Catalog not found: "+wh)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"defaults": map[string]string{},
			"overrides": map[string]string{"prefix": "catalogs/" + d.o.Account}})
	case strings.HasPrefix(p, catalog) && d.proxy != nil:
		d.proxy.ServeHTTP(w, r)
	default:
		icebergError(w, http.StatusNotFound, "NoSuchResourceException", "No resource at "+p)
	}
}

// awsError writes an AWS JSON error answer.
func awsError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// icebergError writes an Iceberg ErrorModel answer.
func icebergError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
}

// SetAWSEnv makes the AWS default credential chain of the test process
// resolve to the given key pair and region from the environment only: the
// shared config and credentials files point at empty files, profiles, web
// identity and the instance metadata service are off, so a developer's
// ~/.aws cannot interfere.
func SetAWSEnv(t testing.TB, accessKeyID, secret, region string) {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": accessKeyID, "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": "",
		"AWS_REGION": region, "AWS_DEFAULT_REGION": region,
		"AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "",
		"AWS_CONFIG_FILE": empty, "AWS_SHARED_CREDENTIALS_FILE": empty,
		"AWS_ROLE_ARN": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_STS": "",
	} {
		t.Setenv(k, v)
	}
}
