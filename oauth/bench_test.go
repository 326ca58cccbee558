package oauth_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/oauth"
	"github.com/floe-lake/floe/store/sqlstore"
)

// BenchmarkClientCredentials measures token issuance end to end over HTTP
// (form parsing, client authentication, signing, the audit append, JSON),
// with the verified-secret cache on (a client fetching tokens repeatedly)
// and off (every request pays argon2id).
func BenchmarkClientCredentials(b *testing.B) {
	for _, tc := range []struct {
		name string
		ttl  time.Duration
	}{{"secret-cache", 5 * time.Minute}, {"argon2id-every-time", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			st, err := sqlstore.Open(context.Background(), filepath.Join(b.TempDir(), "floe.db"), sqlstore.Options{})
			must(b, err)
			defer st.Close()
			svc := auth.New(st, auth.Options{Issuer: issuer, SecretCacheTTL: tc.ttl})
			must(b, svc.Init(context.Background()))
			h := oauth.New(svc, oauth.Options{Audit: audit.New(st, audit.Options{}), FailuresPerMinute: -1})
			_, secret, err := svc.CreatePrincipal(context.Background(), "etl", nil, false, "etl-client", "")
			must(b, err)
			body := url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl-client"}, "client_secret": {secret}}.Encode()
			srv := newBenchServer(b, h)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Post(srv+oauth.TokenPath, "application/x-www-form-urlencoded", strings.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkAssertionExchange measures the three-step flow's exchange:
// an RS256 client assertion verified, its jti recorded,
// a token issued and audited.
func BenchmarkAssertionExchange(b *testing.B) {
	e := newEnv(b, -1)
	now := e.clock.Now()
	bodies := make([]string, b.N)
	for i := range bodies {
		bodies[i] = url.Values{"grant_type": {exchange}, "subject_token_type": {jwtType},
			"subject_token": {e.etlKey.assertion(b, now, nil)}}.Encode()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			resp, err := client.Post(e.srv.URL+oauth.TokenPath, "application/x-www-form-urlencoded", strings.NewReader(bodies[i]))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func newBenchServer(b *testing.B, h http.Handler) string {
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv.URL
}
