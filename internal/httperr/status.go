package httperr

import (
	"net/http"
	"strings"
)

// StatusRecorder is an http.ResponseWriter that remembers the status it
// answered with (200 when the handler wrote a body without one), for audit
// events and logs written after the handler returns.
type StatusRecorder struct {
	http.ResponseWriter
	// Status is the status sent; 0 until a header or body was written.
	Status int
}

// WriteHeader implements http.ResponseWriter.
func (rw *StatusRecorder) WriteHeader(code int) {
	if rw.Status == 0 {
		rw.Status = code
	}
	rw.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (rw *StatusRecorder) Write(b []byte) (int, error) {
	if rw.Status == 0 {
		rw.Status = http.StatusOK
	}
	return rw.ResponseWriter.Write(b)
}

// Unwrap returns the underlying writer (for http.ResponseController).
func (rw *StatusRecorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// BaseURL is the URL clients reach the server at: public (a configured
// public URL, without a trailing slash) when set, else the scheme and host
// r was received with.
func BaseURL(r *http.Request, public string) string {
	if public != "" {
		return strings.TrimSuffix(public, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
