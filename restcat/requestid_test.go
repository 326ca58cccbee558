package restcat

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRequestIDHeader: a client's X-Request-Id is kept (up to 128 bytes);
// otherwise the handler makes one, and both are echoed.
func TestRequestIDHeader(t *testing.T) {
	h := New(nil, Options{})
	for _, tt := range []struct {
		sent string
		keep bool
	}{{"", false}, {"client-id-1", true}, {strings.Repeat("x", 128), true}, {strings.Repeat("x", 129), false}} {
		r := httptest.NewRequest("GET", "/v1/nothing", nil)
		if tt.sent != "" {
			r.Header.Set("X-Request-Id", tt.sent)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		got := w.Header().Get("X-Request-Id")
		if tt.keep && got != tt.sent || !tt.keep && len(got) != 16 {
			t.Errorf("sent %q: X-Request-Id %q", tt.sent, got)
		}
		if w.Code != http.StatusNotFound {
			t.Errorf("status %d", w.Code)
		}
	}
}
