package federation_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/federation"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// BenchmarkLoadTable times, in one run, over HTTP with the admin's token:
// a local loadTable (remote Floe's own table, on the remote), a federated
// loadTable through a Floe whose client cache is warm ("federated-warm",
// the target: >= 0.8x of local) and one with no cache
// ("federated-cold": every load goes to the remote; target <= 1.2x the
// remote's own latency + 1 ms). Each load asks for credentials (the admin
// may read files), as engines do.
func BenchmarkLoadTable(b *testing.B) {
	remote, _, _ := remoteFloe(b)
	env := map[string]string{"ACME_SECRET": remote.Cred.Secret}
	cold := testkit.Start(b, func(c *app.Config) {
		c.Getenv = func(k string) string { return env[k] }
		c.FederatedCatalogs = []federation.Catalog{{Name: "acme", URI: remote.URL, Warehouse: remote.Warehouse,
			Auth: federation.AuthOAuth2, ClientID: remote.Cred.ClientID, ClientSecretEnv: "ACME_SECRET", CacheTTL: -1}}
	})
	warm := testkit.Start(b, func(c *app.Config) {
		c.Getenv = func(k string) string { return env[k] }
		c.FederatedCatalogs = []federation.Catalog{{Name: "acme", URI: remote.URL, Warehouse: remote.Warehouse,
			Auth: federation.AuthOAuth2, ClientID: remote.Cred.ClientID, ClientSecretEnv: "ACME_SECRET", CacheTTL: time.Hour}}
	})
	client := &http.Client{}
	cases := []struct {
		name string
		f    *testkit.Floe
		path string
	}{
		{"local", remote, remote.P("/namespaces/crm/tables/accounts")},
		{"federated-warm", warm, "/v1/acme/namespaces/crm/tables/accounts"},
		{"federated-cold", cold, "/v1/acme/namespaces/crm/tables/accounts"},
	}
	for _, c := range cases {
		tok := c.f.Token(b)
		get := func(b *testing.B) {
			req, _ := http.NewRequest("GET", c.f.URL+c.path, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("%s: %d", c.path, resp.StatusCode)
			}
		}
		b.Run(c.name, func(b *testing.B) {
			get(b)
			for b.Loop() {
				get(b)
			}
		})
	}
}

// BenchmarkForwardedCommit times, in one run, a commit (a set-properties
// update) sent to the remote Floe directly ("local") and the same commit
// forwarded through a Floe whose foreign catalog has writes on
// ("forwarded": Floe's privilege check, the forward with the write
// identity, the cache invalidation), both with an administrator's token.
func BenchmarkForwardedCommit(b *testing.B) {
	remote, local, _, _ := writingFederation(b)
	client := &http.Client{}
	cases := []struct {
		name string
		f    *testkit.Floe
		path string
	}{
		{"local", remote, remote.P("/namespaces/crm/tables/accounts")},
		{"forwarded", local, "/v1/acme/namespaces/crm/tables/accounts"},
	}
	for _, c := range cases {
		tok := c.f.Token(b)
		n := 0
		commit := func(b *testing.B) {
			n++
			body := `{"requirements":[],"updates":[{"action":"set-properties","updates":{"n":"` + strconv.Itoa(n) + `"}}]}`
			req, _ := http.NewRequest("POST", c.f.URL+c.path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("%s: %d", c.path, resp.StatusCode)
			}
		}
		b.Run(c.name, func(b *testing.B) {
			commit(b)
			for b.Loop() {
				commit(b)
			}
		})
	}
}
