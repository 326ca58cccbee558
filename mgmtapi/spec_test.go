package mgmtapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/internal/spectest"
	"github.com/floe-lake/floe/mgmtapi"
)

// specPath is the management API's OpenAPI file.
const specPath = "../docs/api/management.yaml"

// spec is the loaded OpenAPI document with a router over it.
type spec struct {
	doc    *openapi3.T
	router routers.Router
}

func loadSpec() (*spec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(specPath)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", specPath, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("%s is not a valid OpenAPI document: %w", specPath, err)
	}
	doc.Servers = openapi3.Servers{{URL: "http://floe.test"}}
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", specPath, err)
	}
	return &spec{doc: doc, router: r}, nil
}

// coverage records which operations answered with a success status, so
// that TestMain can check that every documented operation was exercised.
type coverage struct {
	mu        sync.Mutex
	succeeded map[string]int
	checked   int
}

var (
	theSpec   *spec
	specErr   error
	specOnce  sync.Once
	exercised = &coverage{succeeded: map[string]int{}}
)

func getSpec(t testing.TB) *spec {
	t.Helper()
	specOnce.Do(func() { theSpec, specErr = loadSpec() })
	if specErr != nil {
		t.Fatal(specErr)
	}
	return theSpec
}

// validator is an http.RoundTripper that checks every /api/v1/ exchange
// against the OpenAPI file: the request (for exchanges that succeeded; a
// refused bad request is often the point of a test) and every response.
type validator struct {
	base http.RoundTripper
	spec *spec
	t    testing.TB
}

func (v *validator) RoundTrip(req *http.Request) (*http.Response, error) {
	base := v.base
	if base == nil {
		base = http.DefaultTransport
	}
	if !strings.HasPrefix(req.URL.Path, mgmtapi.Prefix) {
		return base.RoundTrip(req)
	}
	reqBody, resp, respBody, err := spectest.Exchange(base, req)
	if err != nil {
		return nil, err
	}
	if err := v.spec.validate(req, reqBody, resp, respBody); err != nil {
		v.t.Errorf("management API spec violation: %v", err)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		v.t.Errorf("%s %s: no X-Request-Id in the response", req.Method, req.URL.Path)
	}
	return resp, nil
}

func (s *spec) validate(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	ctx := context.Background()
	vreq, err := http.NewRequestWithContext(ctx, req.Method, "http://floe.test"+req.URL.RequestURI(), bytes.NewReader(reqBody))
	if err != nil {
		return err
	}
	vreq.Header = req.Header.Clone()
	route, params, err := s.router.FindRoute(vreq)
	if err != nil {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			// An undocumented route must be refused, as an ErrorModel.
			return checkErrorBody(respBody)
		}
		return fmt.Errorf("%s %s (answered %d): no such operation in the spec: %w", req.Method, req.URL.Path, resp.StatusCode, err)
	}
	op := route.Operation.OperationID
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}}
	if resp.StatusCode < 300 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			return fmt.Errorf("%s %s request: %w", req.Method, req.URL.RequestURI(), err)
		}
		exercised.mu.Lock()
		exercised.succeeded[op]++
		exercised.mu.Unlock()
	}
	exercised.mu.Lock()
	exercised.checked++
	exercised.mu.Unlock()
	if resp.StatusCode == http.StatusNoContent {
		if len(respBody) > 0 {
			return fmt.Errorf("%s %s: 204 with a body", req.Method, req.URL.Path)
		}
	}
	if _, ok := route.Operation.Responses.Map()[fmt.Sprint(resp.StatusCode)]; !ok && resp.StatusCode < 400 {
		return fmt.Errorf("%s %s: status %d is not documented", req.Method, req.URL.Path, resp.StatusCode)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(respBody)), Options: in.Options}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("%s %s response %d: %w (body %.300s)", req.Method, req.URL.RequestURI(), resp.StatusCode, err, respBody)
	}
	return nil
}

// checkErrorBody checks that b is an ErrorModel envelope.
func checkErrorBody(b []byte) error {
	var e struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil || e.Error.Message == "" || e.Error.Type == "" || e.Error.Code < 400 {
		return fmt.Errorf("not an ErrorModel: %s", b)
	}
	return nil
}

// TestMain runs the tests and then, when the whole suite ran, checks that
// every operation in the OpenAPI file was exercised with a success.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && !testing.Short() {
		s, err := loadSpec()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var missing []string
		for _, op := range operations(s.doc) {
			if exercised.succeeded[op.id] == 0 {
				missing = append(missing, op.id)
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: operations never answered with a success in the tests: %v\n", missing)
			code = 1
		} else {
			fmt.Fprintf(os.Stderr, "management API: %d exchanges validated against %s\n", exercised.checked, specPath)
		}
	}
	os.Exit(code)
}

type operation struct {
	route string // "GET /api/v1/whoami"
	id    string
}

func operations(doc *openapi3.T) []operation {
	var out []operation
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			out = append(out, operation{route: method + " " + path, id: op.OperationID})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].route < out[j].route })
	return out
}

// TestSpecMatchesRoutes: every route the handler serves is in the OpenAPI
// file, and every operation of the file is served.
func TestSpecMatchesRoutes(t *testing.T) {
	s := getSpec(t)
	var documented []string
	for _, op := range operations(s.doc) {
		documented = append(documented, op.route)
		if op.id == "" {
			t.Errorf("%s has no operationId", op.route)
		}
	}
	served := mgmtapi.New(mgmtapi.Options{}).Routes()
	slices.Sort(served)
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is served but not in %s", r, specPath)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("operation %s is in %s but not served", r, specPath)
		}
	}
	if len(served) != len(documented) {
		t.Errorf("%d routes served, %d documented", len(served), len(documented))
	}
}

// TestSpecPrivileges: the Privilege enum of the OpenAPI file lists exactly
// authz's privileges, in order.
func TestSpecPrivileges(t *testing.T) {
	s := getSpec(t)
	ref := s.doc.Components.Schemas["Privilege"]
	if ref == nil || ref.Value == nil {
		t.Fatal("no Privilege schema")
	}
	var got []string
	for _, v := range ref.Value.Enum {
		got = append(got, fmt.Sprint(v))
	}
	var want []string
	for _, p := range authz.AllPrivileges() {
		want = append(want, p.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("Privilege enum %v, want %v", got, want)
	}
}
