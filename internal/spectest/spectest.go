// Package spectest validates HTTP exchanges against the Iceberg REST catalog
// OpenAPI spec (a copy of apache/iceberg's open-api/rest-catalog-open-api.yaml,
// Apache License 2.0). Tests wrap their HTTP clients' transports with it so
// that every request and response they see is checked.
package spectest

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

//go:embed iceberg-rest-catalog-open-api.yaml
var specYAML []byte

// Spec is a loaded, routable copy of the spec.
type Spec struct {
	router routers.Router
	ops    []string
}

// Operations lists the spec's operations as "METHOD /path", the form of
// /v1/config's endpoints, in path order.
func (s *Spec) Operations() []string { return slices.Clone(s.ops) }

// Load parses the spec (about 20 ms). The upstream file has three response headers
// that $ref a parameter instead of a header; they are patched to a plain
// string header so that a strict loader accepts the document.
func Load() (*Spec, error) {
	patched := strings.ReplaceAll(string(specYAML),
		"        etag:\n          $ref: '#/components/parameters/etag'",
		"        etag:\n          schema:\n            type: string")
	doc, err := openapi3.NewLoader().LoadFromData([]byte(patched))
	if err != nil {
		return nil, fmt.Errorf("load spec: %w", err)
	}
	doc.Servers = openapi3.Servers{{URL: "http://floe.test"}}
	// The spec is OpenAPI 3.1 but marks optional nulls with 3.0's
	// "nullable: true", which a 3.1 validator ignores; honour it by adding
	// "null" to the allowed types.
	seen := map[*openapi3.Schema]bool{}
	for _, ref := range doc.Components.Schemas {
		allowNull(ref, seen)
	}
	// PrimitiveTypeValue is a oneOf of types that overlap by design (a
	// string is a StringTypeValue, and may also be a DecimalTypeValue or a
	// DateTypeValue; 1 is both an integer and a long): no value passes
	// exactly one. It means "any of them", as the reference implementations
	// read it.
	if pv := doc.Components.Schemas["PrimitiveTypeValue"]; pv != nil && pv.Value != nil && len(pv.Value.OneOf) > 0 {
		pv.Value.AnyOf, pv.Value.OneOf = pv.Value.OneOf, nil
	}
	narrowSubmitted(doc)
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route spec: %w", err)
	}
	var ops []string
	for _, p := range doc.Paths.InMatchingOrder() {
		for m := range doc.Paths.Value(p).Operations() {
			ops = append(ops, m+" "+p)
		}
	}
	slices.Sort(ops)
	return &Spec{router: r, ops: ops}, nil
}

// Reporter receives validation failures (testing.T satisfies it).
type Reporter interface {
	Errorf(format string, args ...any)
	Helper()
}

// Transport validates every request and response passing through Base.
type Transport struct {
	Base   http.RoundTripper
	Spec   *Spec
	Report Reporter
	// Skip returns true for requests outside the catalog API (e.g. data files).
	Skip func(*http.Request) bool
	// ResponsesOnly skips request validation: for third-party clients, whose
	// requests Floe must accept as they are, only Floe's answers are checked.
	ResponsesOnly bool

	mu      sync.Mutex
	checked int
}

// Checked returns how many exchanges were validated.
func (t *Transport) Checked() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checked
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if t.Skip != nil && t.Skip(req) {
		return base.RoundTrip(req)
	}
	reqBody, resp, respBody, err := Exchange(base, req)
	if err != nil {
		return nil, err
	}
	if verr := t.Spec.Validate(req.Context(), req.Method, req.URL.RequestURI(), req.Header, reqBody, resp.StatusCode, resp.Header, respBody, !t.ResponsesOnly); verr != nil {
		t.Report.Helper()
		t.Report.Errorf("OpenAPI spec violation: %v", verr)
	}
	t.mu.Lock()
	t.checked++
	t.mu.Unlock()
	return resp, nil
}

// Exchange sends req through base with both bodies buffered: it returns
// the request body it sent, and the response with its body read into
// respBody (resp.Body reads it again), for checks of the whole exchange.
func Exchange(base http.RoundTripper, req *http.Request) (reqBody []byte, resp *http.Response, respBody []byte, err error) {
	if req.Body != nil {
		if reqBody, err = io.ReadAll(req.Body); err != nil {
			return nil, nil, nil, err
		}
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	if resp, err = base.RoundTrip(req); err != nil {
		return nil, nil, nil, err
	}
	respBody, err = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, nil, nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	return reqBody, resp, respBody, nil
}

// Validate checks one exchange. Request bodies are validated only for
// successful exchanges (a bad request answered 4xx is the point of a test).
func (s *Spec) Validate(ctx context.Context, method, requestURI string, reqHeader http.Header, reqBody []byte, status int, respHeader http.Header, respBody []byte, checkRequest bool) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://floe.test"+requestURI, bytes.NewReader(reqBody))
	if err != nil {
		return err
	}
	req.Header = reqHeader.Clone()
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s: no such operation in the spec: %w", method, requestURI, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}}
	if strings.HasPrefix(requestURI, "/v1/oauth/tokens") {
		in.Options.ExcludeRequestBody = true
	}
	if status < 300 && checkRequest {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			return fmt.Errorf("%s %s request: %w", method, requestURI, err)
		}
	}
	if method == http.MethodHead || status == http.StatusNoContent || status == http.StatusNotModified {
		if len(respBody) > 0 {
			return fmt.Errorf("%s %s: status %d must have no body", method, requestURI, status)
		}
		return nil
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: respHeader,
		Body: io.NopCloser(bytes.NewReader(respBody)), Options: in.Options}
	err = openapi3filter.ValidateResponse(ctx, out)
	if err != nil && status >= 400 && strings.Contains(err.Error(), "#/components/schemas/ErrorModel") {
		// Some view routes reference ErrorModel directly while every other
		// route (and every client) uses the {"error": ErrorModel} wrapper,
		// which Floe always sends; validate the wrapped model in that case.
		var wrapped struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(respBody, &wrapped) == nil && len(wrapped.Error) > 0 {
			out.Body = io.NopCloser(bytes.NewReader(wrapped.Error))
			err = openapi3filter.ValidateResponse(ctx, out)
		}
	}
	if err != nil {
		return fmt.Errorf("%s %s response %d: %w (body %.300s)", method, requestURI, status, err, respBody)
	}
	return nil
}

func allowNull(ref *openapi3.SchemaRef, seen map[*openapi3.Schema]bool) {
	if ref == nil || ref.Value == nil || seen[ref.Value] {
		return
	}
	s := ref.Value
	seen[s] = true
	if s.Nullable && s.Type != nil && !s.Type.Includes("null") {
		t := append(openapi3.Types{}, (*s.Type)...)
		t = append(t, "null")
		s.Type = &t
	}
	for _, p := range s.Properties {
		allowNull(p, seen)
	}
	allowNull(s.Items, seen)
	if s.AdditionalProperties.Schema != nil {
		allowNull(s.AdditionalProperties.Schema, seen)
	}
	for _, l := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
		for _, x := range l {
			allowNull(x, seen)
		}
	}
}

// narrowSubmitted resolves an overlap in PlanTableScanResult: its oneOf
// holds AsyncPlanningResult (status "submitted" with a plan-id) and
// EmptyPlanningResult (status "submitted" or "cancelled"), so a submitted
// answer matches both and none passes exactly one. The schema's
// discriminator maps "submitted" to AsyncPlanningResult and "cancelled" to
// EmptyPlanningResult; the EmptyPlanningResult branch is narrowed to
// "cancelled", as the mapping reads (the validator ignores the mapping).
func narrowSubmitted(doc *openapi3.T) {
	res := doc.Components.Schemas["PlanTableScanResult"]
	if res == nil || res.Value == nil {
		return
	}
	for i, br := range res.Value.OneOf {
		if !strings.HasSuffix(br.Ref, "/EmptyPlanningResult") || br.Value == nil || br.Value.Properties["status"] == nil {
			continue
		}
		empty := *br.Value
		empty.Properties = openapi3.Schemas{}
		for k, v := range br.Value.Properties {
			empty.Properties[k] = v
		}
		status := *br.Value.Properties["status"].Value
		status.Enum = []any{"cancelled"}
		empty.Properties["status"] = openapi3.NewSchemaRef("", &status)
		res.Value.OneOf[i] = openapi3.NewSchemaRef("", &empty)
	}
}
