package auth_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe/auth"
)

// BenchmarkIssue measures signing alone: one RS256 access token per op.
func BenchmarkIssue(b *testing.B) {
	c := newClock()
	s := newService(b, openStore(b, c.Now), c, auth.Options{})
	p, _, err := s.CreatePrincipal(context.Background(), "etl", nil, false, "", "")
	must(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Issue(context.Background(), p, p.Scopes); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkVerify measures what authentication adds to each catalog
// request: Verify of a token seen before (signature cached; revocation list
// and principal read from SQLite), reporting p50 and p99 latency.
func BenchmarkVerify(b *testing.B) {
	for _, tc := range []struct {
		name   string
		tokens int // distinct tokens cycled through
	}{{"hot", 1}, {"many-tokens", 1000}} {
		b.Run(tc.name, func(b *testing.B) {
			c := newClock()
			s := newService(b, openStore(b, c.Now), c, auth.Options{})
			ctx := context.Background()
			p, _, err := s.CreatePrincipal(ctx, "etl", nil, false, "", "")
			must(b, err)
			toks := make([]string, tc.tokens)
			for i := range toks {
				t, err := s.Issue(ctx, p, p.Scopes)
				must(b, err)
				toks[i] = t.AccessToken
				_, err = s.Verify(ctx, t.AccessToken)
				must(b, err)
			}
			var mu sync.Mutex
			var lat []time.Duration
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				local := make([]time.Duration, 0, 1024)
				i := 0
				for pb.Next() {
					start := time.Now()
					if _, err := s.Verify(ctx, toks[i%len(toks)]); err != nil {
						b.Error(err)
						return
					}
					local = append(local, time.Since(start))
					i++
				}
				mu.Lock()
				lat = append(lat, local...)
				mu.Unlock()
			})
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
			}
		})
	}
}

// BenchmarkVerifyFirstSight measures Verify of a token this node has not
// seen: the signature check (ES256) plus the store read.
func BenchmarkVerifyFirstSight(b *testing.B) {
	c := newClock()
	s := newService(b, openStore(b, c.Now), c, auth.Options{})
	ctx := context.Background()
	p, _, err := s.CreatePrincipal(ctx, "etl", nil, false, "", "")
	must(b, err)
	toks := make([]string, b.N)
	for i := range toks {
		t, err := s.Issue(ctx, p, p.Scopes)
		must(b, err)
		toks[i] = t.AccessToken
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Verify(ctx, toks[i]); err != nil {
			b.Fatal(err)
		}
	}
}
