package spectest

import (
	"context"
	"net/http"
	"testing"
)

// TestPlanTableScanStatuses: a submitted plan needs its plan-id (and is no
// longer ambiguous between AsyncPlanningResult and EmptyPlanningResult);
// fetchPlanningResult answers submitted without one.
func TestPlanTableScanStatuses(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Content-Type": {"application/json"}}
	for _, c := range []struct {
		method, path, body string
		ok                 bool
	}{
		{"POST", "/plan", `{"status":"submitted","plan-id":"p1"}`, true},
		{"POST", "/plan", `{"status":"submitted"}`, false},
		{"POST", "/plan", `{"status":"cancelled"}`, true},
		{"POST", "/plan", `{"status":"completed","plan-id":"p1","file-scan-tasks":[]}`, true},
		{"POST", "/plan", `{"status":"bogus"}`, false},
		{"GET", "/plan/p1", `{"status":"submitted"}`, true},
		// FailedPlanningResult is IcebergErrorResponse (no additional
		// properties) with a status: nothing passes it, so Floe answers a
		// failed plan with the error response itself, as the spec's text
		// says ("the response must be a valid error response").
		{"GET", "/plan/p1", `{"status":"failed","error":{"message":"m","type":"T","code":500}}`, false},
	} {
		err := s.Validate(context.Background(), c.method, "/v1/wh/namespaces/ns/tables/t"+c.path, h, []byte(`{}`), 200, h, []byte(c.body), false)
		if (err == nil) != c.ok {
			t.Errorf("%s %s %s: %v, want ok=%t", c.method, c.path, c.body, err, c.ok)
		}
	}
}
