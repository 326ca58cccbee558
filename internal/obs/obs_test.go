package obs

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

type sink struct {
	mu   sync.Mutex
	reqs []Request
}

func (s *sink) ObserveRequest(q Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, q)
}

// TestMiddleware: the route a layer names, else the fallback, else
// "other"; the principal; the status (200 when only a body was written);
// bounded methods; one log line without the path or query string.
func TestMiddleware(t *testing.T) {
	for _, c := range []struct {
		name, method, target string
		handler              http.HandlerFunc
		fallback             func(*http.Request) string
		wantRoute, wantMeth  string
		wantStatus           int
		wantPrincipal        string
	}{
		{"named route", "GET", "/v1/w/namespaces/secret-ns?X-Amz-Signature=sig", func(w http.ResponseWriter, r *http.Request) {
			SetRoute(r.Context(), "/v1/{prefix}/namespaces/{namespace}")
			SetPrincipal(r.Context(), "alice")
			w.WriteHeader(204)
		}, nil, "/v1/{prefix}/namespaces/{namespace}", "GET", 204, "alice"},
		{"body only", "POST", "/x/secret-path", func(w http.ResponseWriter, r *http.Request) {
			SetRoute(r.Context(), "/x/{y}")
			_, _ = w.Write([]byte("ok"))
		}, nil, "/x/{y}", "POST", 200, ""},
		{"nothing written", "DELETE", "/x", func(w http.ResponseWriter, r *http.Request) {}, nil, Other, "DELETE", 200, ""},
		{"fallback", "GET", "/known", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) },
			func(r *http.Request) string { return "/known" }, "/known", "GET", 404, ""},
		{"fallback declines", "GET", "/secret-path", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) },
			func(r *http.Request) string { return "" }, Other, "GET", 404, ""},
		{"odd method", "PROPFIND", "/secret-path", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(405) },
			nil, Other, Other, 405, ""},
		{"interim status then final", "PUT", "/secret-path", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(100)
			w.WriteHeader(201)
		}, nil, Other, "PUT", 201, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := &sink{}
			h := Middleware(c.handler, Options{Name: "rest", Route: c.fallback, Recorder: s,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(c.method, c.target, nil))
			if len(s.reqs) != 1 {
				t.Fatalf("%d requests recorded", len(s.reqs))
			}
			q := s.reqs[0]
			if q.Listener != "rest" || q.Route != c.wantRoute || q.Method != c.wantMeth || q.Status != c.wantStatus || q.Duration <= 0 {
				t.Fatalf("recorded %+v", q)
			}
			line := logs.String()
			if strings.Count(line, "\n") != 1 || !strings.Contains(line, "msg=request") || !strings.Contains(line, "duration_ms=") {
				t.Fatalf("log: %q", line)
			}
			if (c.wantPrincipal != "") != strings.Contains(line, "principal="+c.wantPrincipal) {
				t.Fatalf("principal in %q", line)
			}
			for _, bad := range []string{"secret", "X-Amz", "sig"} {
				if strings.Contains(line, bad) {
					t.Fatalf("log carries %q: %q", bad, line)
				}
			}
		})
	}
}

// TestMiddlewareNoLoggerNoRecorder: both optional; the request id comes
// from the response's X-Request-Id or x-amz-request-id.
func TestMiddlewareRequestID(t *testing.T) {
	Middleware(http.NotFoundHandler(), Options{Name: "x"}).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	for _, hdr := range []string{"X-Request-Id", "x-amz-request-id"} {
		var logs bytes.Buffer
		h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(hdr, "rid-42")
		}), Options{Name: "x", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
		if !strings.Contains(logs.String(), "request_id=rid-42") {
			t.Fatalf("%s: %q", hdr, logs.String())
		}
	}
}

// TestSetWithoutInfo: the setters do nothing on a context without Info.
func TestSetWithoutInfo(t *testing.T) {
	SetRoute(context.Background(), "x")
	SetPrincipal(context.Background(), "x")
	if InfoFrom(context.Background()) != nil {
		t.Fatal("info from nowhere")
	}
}

func TestLabels(t *testing.T) {
	for in, want := range map[int]string{0: Other, 99: Other, 100: "100", 200: "200", 599: "599", 600: Other, 1 << 20: Other} {
		if got := StatusLabel(in); got != want {
			t.Errorf("StatusLabel(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"GET": "GET", "get": Other, "BREW": Other, "": Other, "OPTIONS": "OPTIONS"} {
		if got := Method(in); got != want {
			t.Errorf("Method(%q) = %q, want %q", in, got, want)
		}
	}
	if got := TemplateFrom("GET /v1/{prefix}"); got != "/v1/{prefix}" {
		t.Errorf("TemplateFrom: %q", got)
	}
	if got := TemplateFrom("/v1/x"); got != "/v1/x" {
		t.Errorf("TemplateFrom: %q", got)
	}
}

// FuzzMiddlewareLabels: whatever the method and path, the labels are the
// fallback's, "other" or a standard method, never the request's text.
func FuzzMiddlewareLabels(f *testing.F) {
	f.Add("GET", "/v1/x")
	f.Add("PROPFIND", "/a/b?c=d")
	f.Fuzz(func(t *testing.T, method, path string) {
		r, err := http.NewRequest("GET", "http://h/", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Method, r.URL.Path, r.RequestURI = method, path, path
		s := &sink{}
		Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), Options{Name: "rest", Recorder: s}).
			ServeHTTP(httptest.NewRecorder(), r)
		q := s.reqs[0]
		if q.Route != Other || (q.Method != Other && q.Method != method) || Method(q.Method) != q.Method {
			t.Fatalf("labels %+v for %q %q", q, method, path)
		}
	})
}

// BenchmarkMiddleware is the per-request cost of the middleware with and
// without the info log line (to io.Discard, JSON).
func BenchmarkMiddleware(b *testing.B) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetRoute(r.Context(), "/v1/{prefix}/namespaces/{namespace}/tables/{table}")
		w.WriteHeader(200)
	})
	for _, c := range []struct {
		name string
		log  *slog.Logger
	}{{"nolog", nil}, {"log", slog.New(slog.NewJSONHandler(io.Discard, nil))}} {
		b.Run(c.name, func(b *testing.B) {
			h := Middleware(next, Options{Name: "rest", Logger: c.log, Recorder: &nopRecorder{}})
			r := httptest.NewRequest("GET", "/v1/w/namespaces/n/tables/t", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, r)
			}
		})
	}
}

type nopRecorder struct{}

func (nopRecorder) ObserveRequest(Request) {}
