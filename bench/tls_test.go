//go:build linux

package bench

// Benchmarks of TLS on the listeners (issue 15, part D): loadTable over
// HTTPS against plaintext, and a large GET from the embedded S3 endpoint
// over HTTPS against plaintext, in one run of the same build. Each b.Loop
// iteration is a round that measures both servers in rotating order; the
// metrics are medians over the rounds (run with -benchtime 3x or more).
// See docs/benchmarks.md, "TLS on every listener (issue 15, part D)".
//
//	FLOE_BENCH_TLS_SIZE   size of the GET object (default 1GiB)

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/objstore/bucket"
)

// tlsSide is one of the two servers compared.
type tlsSide struct {
	name string
	f    *testkit.Floe
	c    *http.Client // keep-alive, trusting the server's CA
	tls  *tls.Config  // nil for plaintext
	tok  string
}

func startSide(b *testing.B, name string, withTLS bool) *tlsSide {
	b.Helper()
	f := testkit.Start(b, func(c *app.Config) { c.TLSSelfSigned = withTLS; c.Maintenance = false })
	s := &tlsSide{name: name, f: f}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 128, 128
	if withTLS {
		pem, err := os.ReadFile(filepath.Join(f.Dir, "tls", "ca.pem"))
		if err != nil {
			b.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		s.tls = &tls.Config{RootCAs: pool}
		tr.TLSClientConfig = s.tls
		f.Transport.Base = tr
	}
	s.c = &http.Client{Transport: tr}
	s.tok = f.Token(b)
	createTables(b, f, s.c, s.tok, "load", 8)
	return s
}

// BenchmarkTLSLoadTable: 32 keep-alive clients loading tables from a
// plaintext server and from a TLS one (--tls-self-signed), 2000 calls per
// server per round. Reports the ops/s of each and tls/plain.
func BenchmarkTLSLoadTable(b *testing.B) {
	sides := []*tlsSide{startSide(b, "plain", false), startSide(b, "tls", true)}
	const calls = 2000
	rates := map[string][]float64{}
	round := 0
	for b.Loop() {
		for k := range sides {
			s := sides[(k+round)%2]
			start := time.Now()
			errs := make(chan error, 32)
			next := make(chan int, calls)
			for i := range calls {
				next <- i
			}
			close(next)
			for range 32 {
				go func() {
					for i := range next {
						st, err := do(s.c, s.tok, "GET", s.f.URL+s.f.P(fmt.Sprintf("/namespaces/load/tables/t%d", i%8)), "")
						if err == nil && st != 200 {
							err = fmt.Errorf("%s: status %d", s.name, st)
						}
						if err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for range 32 {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
			rates[s.name] = append(rates[s.name], calls/time.Since(start).Seconds())
		}
		round++
	}
	b.ReportMetric(median(rates["plain"]), "plain_ops/s")
	b.ReportMetric(median(rates["tls"]), "tls_ops/s")
	ratios := make([]float64, len(rates["tls"]))
	for i := range ratios {
		ratios[i] = rates["tls"][i] / rates["plain"][i]
	}
	b.ReportMetric(median(ratios), "tls/plain")
}

// BenchmarkTLSGet: one GET of a large object (FLOE_BENCH_TLS_SIZE, default
// 1 GiB, encrypted at rest) from the embedded S3 endpoint with vended
// credentials, over plaintext and over TLS. Reports MiB/s of each and
// tls/plain.
func BenchmarkTLSGet(b *testing.B) {
	size := int64(1 << 30)
	if v := os.Getenv("FLOE_BENCH_TLS_SIZE"); v != "" {
		n, err := parseSize(v)
		if err != nil {
			b.Fatal(err)
		}
		size = n
	}
	sides := []*tlsSide{startSide(b, "plain", false), startSide(b, "tls", true)}
	clients := map[string]*s3.Client{}
	keys := map[string]string{}
	for _, s := range sides {
		r := s.f.Do(b, "GET", s.f.P("/namespaces/load/tables/t0"), nil, "X-Iceberg-Access-Delegation", "vended-credentials")
		var lt testkit.Table
		if err := json.Unmarshal(r.Body, &lt); err != nil || r.Status != 200 {
			b.Fatalf("%s: loadTable %d %v", s.name, r.Status, err)
		}
		key := strings.TrimPrefix(lt.Metadata.Location, "s3://"+s.f.Warehouse+"/") + "/data/big.bin"
		chunk := make([]byte, 1<<20)
		_, _ = rand.Read(chunk)
		body := io.LimitReader(repeatReader(chunk), size)
		if _, err := s.f.App.Objects().Put(context.Background(), s.f.Warehouse, key, body, bucket.PutOptions{Size: size}); err != nil {
			b.Fatal(err)
		}
		c := lt.Config
		tr := &http.Transport{TLSClientConfig: s.tls}
		clients[s.name] = s3.New(s3.Options{BaseEndpoint: aws.String(c["s3.endpoint"]), Region: c["client.region"], UsePathStyle: true,
			HTTPClient:  &http.Client{Transport: tr},
			Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])})
		keys[s.name] = key
	}
	rates := map[string][]float64{}
	round := 0
	buf := make([]byte, 1<<20)
	for b.Loop() {
		for k := range sides {
			s := sides[(k+round)%2]
			start := time.Now()
			out, err := clients[s.name].GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.f.Warehouse), Key: aws.String(keys[s.name])})
			if err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			n, err := io.CopyBuffer(io.Discard, out.Body, buf)
			out.Body.Close()
			if err != nil || n != size {
				b.Fatalf("%s: read %d of %d: %v", s.name, n, size, err)
			}
			rates[s.name] = append(rates[s.name], float64(size)/(1<<20)/time.Since(start).Seconds())
		}
		round++
	}
	b.ReportMetric(median(rates["plain"]), "plain_MiB/s")
	b.ReportMetric(median(rates["tls"]), "tls_MiB/s")
	ratios := make([]float64, len(rates["tls"]))
	for i := range ratios {
		ratios[i] = rates["tls"][i] / rates["plain"][i]
	}
	b.ReportMetric(median(ratios), "tls/plain")
}

// repeatReader repeats chunk forever.
func repeatReader(chunk []byte) io.Reader {
	return &repeater{chunk: chunk, r: bytes.NewReader(chunk)}
}

type repeater struct {
	chunk []byte
	r     *bytes.Reader
}

func (r *repeater) Read(p []byte) (int, error) {
	if r.r.Len() == 0 {
		r.r.Reset(r.chunk)
	}
	return r.r.Read(p)
}
