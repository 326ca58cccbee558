package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"testing"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// allowlisted configures every listener with a 256-entry allowlist that
// admits loopback only at its end, trusts 127.0.0.1 as a proxy, and gives
// the admin principal an allowlist of its own: the checks run in full on
// every request (binary search, X-Forwarded-For walk, per-principal scan).
func allowlisted(b *testing.B) (testkit.Option, []string) {
	var cidrs []string
	for i := range 255 {
		cidrs = append(cidrs, netip.AddrFrom4([4]byte{10, byte(i), 0, 0}).String()+"/16")
	}
	cidrs = append(cidrs, "127.0.0.0/8")
	return func(c *app.Config) {
		c.Network.RESTAllowCIDRs, c.Network.S3AllowCIDRs, c.Network.SQLAllowCIDRs = cidrs, cidrs, cidrs
		c.Network.TrustedProxies = []string{"127.0.0.1"}
	}, []string{"10.0.0.0/8", "192.168.0.0/16", "127.0.0.1"}
}

// BenchmarkLoadTableAllowlisted is BenchmarkLoadTable with allowlists on
// every listener and on the caller, requests arriving through a trusted
// proxy with X-Forwarded-For.
func BenchmarkLoadTableAllowlisted(b *testing.B) {
	opt, mine := allowlisted(b)
	f := testkit.Start(b, storeOption(b), opt)
	if _, err := f.App.Auth().SetAllowedCIDRs(context.Background(), "admin", mine); err != nil {
		b.Fatal(err)
	}
	tok := f.Token(b)
	c := client(64)
	createTables(b, f, c, tok, "load", 8)
	run(b, 32, func(w, i int) error {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s%s", f.URL, f.P(fmt.Sprintf("/namespaces/load/tables/t%d", i%8))), nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("X-Forwarded-For", "10.200.3.4")
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
}

// BenchmarkS3GetSmallAllowlisted is BenchmarkS3GetSmall with allowlists on
// every listener and in the vended credential, requests arriving through a
// trusted proxy with X-Forwarded-For.
func BenchmarkS3GetSmallAllowlisted(b *testing.B) {
	opt, mine := allowlisted(b)
	f := testkit.Start(b, opt)
	if _, err := f.App.Auth().SetAllowedCIDRs(context.Background(), "admin", mine); err != nil {
		b.Fatal(err)
	}
	c, urls := smallObjects(b, f)
	run(b, 16, func(w, i int) error {
		req, _ := http.NewRequest("GET", urls[i%len(urls)], nil)
		req.Header.Set("X-Forwarded-For", "10.200.3.4")
		resp, err := c.Do(req)
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
