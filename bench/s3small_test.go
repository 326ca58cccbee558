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

// BenchmarkS3GetSmall: 16 concurrent clients reading 4 KiB objects from the
// embedded S3 endpoint over keep-alive connections, with presigned URLs made
// once (the endpoint's per-request cost: routing, signature check, audit).
func BenchmarkS3GetSmall(b *testing.B) {
	f := testkit.Start(b)
	c, urls := smallObjects(b, f)
	run(b, 16, func(w, i int) error {
		resp, err := c.Get(urls[i%len(urls)])
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

// smallObjects writes 16 objects of 4 KiB into a new table of f with the
// credentials its loadTable vends, and returns a client of 16 connections
// and presigned GET URLs of the objects (valid for an hour).
func smallObjects(b *testing.B, f *testkit.Floe) (*http.Client, []string) {
	tbl := f.CreateTable(b, "s3small", "t")
	r := f.Do(b, "GET", f.P("/namespaces/s3small/tables/t"), nil, "X-Iceberg-Access-Delegation", "vended-credentials")
	r.JSON(b, &tbl)
	cfg := tbl.Config
	creds := sigv4.Credentials{AccessKeyID: cfg["s3.access-key-id"], SecretAccessKey: cfg["s3.secret-access-key"], SessionToken: cfg["s3.session-token"]}
	c := client(16)
	const objects = 16
	urls := make([]string, objects)
	for i := range objects {
		key := fmt.Sprintf("%s/data/small-%d.bin", strings.TrimPrefix(tbl.Metadata.Location, "s3://"), i)
		sign := func(method string) string {
			req, _ := http.NewRequest(method, f.App.S3URL()+"/"+key, nil)
			u, err := sigv4.Presign(req, creds, cfg["client.region"], "s3", time.Now(), time.Hour, sigv4.SignOptions{})
			if err != nil {
				b.Fatal(err)
			}
			return u
		}
		req, _ := http.NewRequest("PUT", sign("PUT"), bytes.NewReader(bytes.Repeat([]byte{byte(i)}, 4<<10)))
		resp, err := c.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("PUT %s: %v %v", key, resp, err)
		}
		_ = resp.Body.Close()
		urls[i] = sign("GET")
	}
	return c, urls
}
