package check

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxBody bounds every response body read (a loadTable answer may be large).
const maxBody = 64 << 20

// run is the state of one run: what earlier checks learnt.
type run struct {
	o    Options
	base string
	rep  *Report

	tokenURL  string
	token     string        // the checking identity's bearer token ("" for none)
	tokenLife time.Duration // expires_in of that token (0: absent)

	config   *catalogConfig
	prefix   string // the REST prefix, "" for none
	floe     bool
	tables   []*tableLoad // the sampled tables, loaded
	ns       [][]string   // namespaces listed
	nsListed bool
}

// catalogConfig is the answer of GET /v1/config.
type catalogConfig struct {
	Defaults  map[string]string `json:"defaults"`
	Overrides map[string]string `json:"overrides"`
	Endpoints []string          `json:"endpoints"`
}

// tableLoad is a sampled table and its loadTable answer.
type tableLoad struct {
	ns       []string
	name     string
	status   int
	result   loadResult
	loadErr  string
	metadata tableMetadata
}

func (t *tableLoad) String() string {
	return strings.Join(append(append([]string(nil), t.ns...), t.name), ".")
}

// loadResult is the LoadTableResult of the spec.
type loadResult struct {
	MetadataLocation   string              `json:"metadata-location"`
	Metadata           json.RawMessage     `json:"metadata"`
	Config             map[string]string   `json:"config"`
	StorageCredentials []storageCredential `json:"storage-credentials"`
}

type storageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

// tableMetadata is the part of the table metadata the checks read.
type tableMetadata struct {
	FormatVersion     int               `json:"format-version"`
	Location          string            `json:"location"`
	CurrentSnapshotID *int64            `json:"current-snapshot-id"`
	Properties        map[string]string `json:"properties"`
	DefaultSpecID     int               `json:"default-spec-id"`
	PartitionSpecs    []struct {
		SpecID int               `json:"spec-id"`
		Fields []json.RawMessage `json:"fields"`
	} `json:"partition-specs"`
	Snapshots []struct {
		SnapshotID int64             `json:"snapshot-id"`
		Summary    map[string]string `json:"summary"`
	} `json:"snapshots"`
}

// currentSummary is the current snapshot's summary (nil without one).
func (m *tableMetadata) currentSummary() map[string]string {
	if m.CurrentSnapshotID == nil {
		return nil
	}
	for _, s := range m.Snapshots {
		if s.SnapshotID == *m.CurrentSnapshotID {
			return s.Summary
		}
	}
	return nil
}

// answer is an HTTP answer: status and body (status 0: no answer, err set).
type answer struct {
	status int
	body   []byte
	header http.Header
	err    error
}

// describe renders an answer for evidence: the status and the spec
// ErrorModel's message, if any.
func (a answer) describe() string {
	if a.err != nil {
		return a.err.Error()
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
		OAuthError string `json:"error_description"`
	}
	msg := ""
	if json.Unmarshal(a.body, &e) == nil {
		msg = e.Error.Message
		if msg == "" {
			msg = e.OAuthError
		}
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg != "" {
		return fmt.Sprintf("HTTP %d: %s", a.status, msg)
	}
	return fmt.Sprintf("HTTP %d", a.status)
}

// call sends a catalog request with bearer token tok ("" for none).
func (r *run) call(ctx context.Context, tok, method, path string, header http.Header) answer {
	u := path
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		u = r.base + path
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return answer{err: fmt.Errorf("%s %s: %w", method, path, err)}
	}
	req.Header.Set("Accept", "application/json")
	for k, vs := range header {
		req.Header[k] = vs
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return r.send(req)
}

func (r *run) send(req *http.Request) answer {
	resp, err := r.o.HTTPClient.Do(req)
	if err != nil {
		return answer{err: fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return answer{status: resp.StatusCode, err: fmt.Errorf("%s %s: reading the answer: %w", req.Method, req.URL.Path, err)}
	}
	return answer{status: resp.StatusCode, body: b, header: resp.Header}
}

// path is the catalog path of rest ("/namespaces...") under the prefix.
func (r *run) path(rest string) string {
	if r.prefix == "" {
		return "/v1" + rest
	}
	return "/v1/" + url.PathEscape(r.prefix) + rest
}

// nsPath encodes a namespace for a path (levels joined by the unit separator).
func nsPath(ns []string) string { return url.PathEscape(strings.Join(ns, "\x1f")) }

// tokenAnswer is an OAuth2 token response (RFC 6749 5.1).
type tokenAnswer struct {
	AccessToken     string          `json:"access_token"`
	TokenType       string          `json:"token_type"`
	ExpiresIn       json.RawMessage `json:"expires_in"`
	IssuedTokenType string          `json:"issued_token_type"`
	RefreshToken    string          `json:"refresh_token"`
	Error           string          `json:"error"`
}

// postToken posts form to the token endpoint.
func (r *run) postToken(ctx context.Context, form url.Values) (tokenAnswer, answer) {
	var ta tokenAnswer
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return ta, answer{err: fmt.Errorf("token request: %w", err)}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	a := r.send(req)
	if a.err == nil {
		_ = json.Unmarshal(a.body, &ta)
	}
	return ta, a
}

// clientToken runs the client-credentials grant for credential
// ("id:secret") with scope ("" for none).
func (r *run) clientToken(ctx context.Context, credential, scope string) (tokenAnswer, answer) {
	id, secret, _ := strings.Cut(credential, ":")
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	if scope != "" {
		form.Set("scope", scope)
	}
	return r.postToken(ctx, form)
}

// expiresIn reads expires_in (seconds, a number or a numeric string); 0
// when absent or unusable.
func expiresIn(raw json.RawMessage) time.Duration {
	s := strings.Trim(string(raw), `"`)
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n <= 0 || n > 10*365*24*3600 {
		return 0
	}
	return time.Duration(n * float64(time.Second))
}

// reachable makes sure something answers HTTP at the URL: a refused
// connection or a DNS failure is a connection error, not a finding.
func (r *run) reachable(ctx context.Context) error {
	a := r.call(ctx, "", http.MethodGet, "/v1/config", nil)
	if a.err != nil {
		return fmt.Errorf("%w at %s: %w", ErrConnect, r.base, a.err)
	}
	if a.status == http.StatusNotFound {
		return fmt.Errorf("%w: %s answers 404 to GET /v1/config: not an Iceberg REST catalog base URI", ErrConnect, r.base)
	}
	return nil
}
