package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/sigv4"
)

// BenchmarkS3GetSmall32 is the issue 15 revocation target: 32 concurrent
// clients reading 4 KiB objects from the embedded S3 endpoint with header
// (not presigned) SigV4 signatures made per request, as SDKs send them; each
// request's credential goes through the signature check and, since issue
// 15, the revocation check. Compare builds with the same benchmark.
func BenchmarkS3GetSmall32(b *testing.B) {
	f := testkit.Start(b)
	tbl := f.CreateTable(b, "s3small32", "t")
	r := f.Do(b, "GET", f.P("/namespaces/s3small32/tables/t"), nil, "X-Iceberg-Access-Delegation", "vended-credentials")
	r.JSON(b, &tbl)
	cfg := tbl.Config
	creds := sigv4.Credentials{AccessKeyID: cfg["s3.access-key-id"], SecretAccessKey: cfg["s3.secret-access-key"], SessionToken: cfg["s3.session-token"]}
	c := client(32)
	const objects = 16
	keys := make([]string, objects)
	signed := func(method, key string, body []byte) *http.Request {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, _ := http.NewRequest(method, f.App.S3URL()+"/"+key, rd)
		if err := sigv4.Sign(req, creds, cfg["client.region"], "s3", time.Now(), sigv4.UnsignedPayload, sigv4.SignOptions{SignBody: true}); err != nil {
			b.Fatal(err)
		}
		return req
	}
	for i := range objects {
		keys[i] = fmt.Sprintf("%s/data/small-%d.bin", strings.TrimPrefix(tbl.Metadata.Location, "s3://"), i)
		resp, err := c.Do(signed("PUT", keys[i], bytes.Repeat([]byte{byte(i)}, 4<<10)))
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("PUT %s: %v %v", keys[i], resp, err)
		}
		_ = resp.Body.Close()
	}
	run(b, 32, func(w, i int) error {
		resp, err := c.Do(signed("GET", keys[i%objects], nil))
		if err != nil {
			return err
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 || n != 4<<10 {
			return fmt.Errorf("GET: status %d, %d bytes", resp.StatusCode, n)
		}
		return nil
	})
}
