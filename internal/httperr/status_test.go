package httperr

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestBaseURL(t *testing.T) {
	plain := httptest.NewRequest("GET", "http://floe.local:8181/v1/config", nil)
	secure := httptest.NewRequest("GET", "https://floe.local/v1/config", nil)
	secure.TLS = &tls.ConnectionState{}
	for _, tc := range []struct {
		r      *http.Request
		public string
		want   string
	}{
		{plain, "", "http://floe.local:8181"},
		{secure, "", "https://floe.local"},
		{plain, "https://data.example.com/", "https://data.example.com"},
		{secure, "https://data.example.com/floe", "https://data.example.com/floe"},
	} {
		if got := BaseURL(tc.r, tc.public); got != tc.want {
			t.Errorf("BaseURL(%s, %q) = %q, want %q", tc.r.URL, tc.public, got, tc.want)
		}
	}
}

func TestStatusRecorder(t *testing.T) {
	w := httptest.NewRecorder()
	rec := &StatusRecorder{ResponseWriter: w}
	_, _ = rec.Write([]byte("x"))
	rec.WriteHeader(http.StatusTeapot) // too late: the first status stands
	if rec.Status != http.StatusOK || rec.Unwrap() != w {
		t.Fatalf("status %d", rec.Status)
	}
	rec = &StatusRecorder{ResponseWriter: httptest.NewRecorder()}
	rec.WriteHeader(http.StatusNotFound)
	if rec.Status != http.StatusNotFound {
		t.Fatalf("status %d", rec.Status)
	}
}
