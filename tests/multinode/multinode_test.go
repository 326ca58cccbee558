// Package multinode runs several Floe nodes over one PostgreSQL metadata
// store and checks that they behave as one catalog.
package multinode

import (
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/internal/testkit"
)

// nodes starts n Floe nodes sharing one fresh PostgreSQL schema, one
// warehouse directory and one public URL (the token issuer), as nodes behind
// one load balancer do.
func nodes(t *testing.T, n int) []*testkit.Floe {
	dsn := pgtest.Fresh(t, pgtest.ServerDSN(t))
	shared := t.TempDir()
	var out []*testkit.Floe
	for i := 0; i < n; i++ {
		out = append(out, testkit.Start(t, func(c *app.Config) {
			c.Store = dsn
			c.DataDir = shared
			c.PublicURL = "http://floe.multinode.test"
		}))
	}
	return out
}

// TestNodes_OneCatalog: 16 writers spread over three nodes commit to one
// table; every commit is applied exactly once or rejected with 409, and the
// snapshot log holds exactly the applied ones.
func TestNodes_OneCatalog(t *testing.T) {
	ns := nodes(t, 3)
	a := ns[0]
	if r := a.Do(t, "POST", a.P("/namespaces"), `{"namespace":["mn"]}`); r.Status != 200 {
		t.Fatalf("create namespace: %d %s", r.Status, r.Body)
	}
	body := `{"name":"hot","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}}`
	if r := a.Do(t, "POST", a.P("/namespaces/mn/tables"), body); r.Status != 200 {
		t.Fatalf("create table: %d %s", r.Status, r.Body)
	}
	// a table created on node A is visible on B and C at once
	for _, n := range ns[1:] {
		if r := n.Do(t, "HEAD", n.P("/namespaces/mn/tables/hot"), nil); r.Status != 204 {
			t.Fatalf("table not visible on another node: %d", r.Status)
		}
	}
	const writers, commits = 16, 50
	for _, n := range ns {
		n.SkipValidation() // before any writer starts: the writers read it
	}
	results := make([]testkit.WriterResult, writers)
	var wg sync.WaitGroup
	for w := range results {
		node := ns[w%len(ns)]
		tok := node.Token(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[w] = node.RunWriter(t, tok, "/namespaces/mn/tables/hot", w+1, commits)
		}()
	}
	wg.Wait()
	applied := map[int64]bool{}
	for _, r := range results {
		if len(r.Applied)+r.Rejected != commits {
			t.Fatalf("a writer accounted for %d attempts, want %d", len(r.Applied)+r.Rejected, commits)
		}
		for _, id := range r.Applied {
			if applied[id] {
				t.Fatalf("snapshot %d applied twice", id)
			}
			applied[id] = true
		}
	}
	var md struct {
		Metadata struct {
			SnapshotLog []struct {
				ID int64 `json:"snapshot-id"`
			} `json:"snapshot-log"`
		} `json:"metadata"`
	}
	ns[2].Do(t, "GET", ns[2].P("/namespaces/mn/tables/hot"), nil).JSON(t, &md)
	if len(md.Metadata.SnapshotLog) != len(applied) {
		t.Fatalf("snapshot log %d entries, %d commits applied", len(md.Metadata.SnapshotLog), len(applied))
	}
	for _, e := range md.Metadata.SnapshotLog {
		if !applied[e.ID] {
			t.Fatalf("snapshot %d in the log was never acknowledged", e.ID)
		}
	}
	t.Logf("%d writers on %d nodes: %d applied, %d rejected", writers, len(ns), len(applied), writers*commits-len(applied))
}

// TestNodes_TokensAndDisable: a token minted on node A works on node B; a
// token revoked at node A's revocation endpoint, and every token of a
// principal disabled through node A's store, is refused by node B on the very
// next request.
func TestNodes_TokensAndDisable(t *testing.T) {
	ns := nodes(t, 2)
	a, b := ns[0], ns[1]
	p, secret, err := a.App.Auth().CreatePrincipal(t.Context(), "etl", nil, false, "", "")
	if err != nil {
		t.Fatal(err)
	}
	// A grant made through node A applies on node B's next request.
	if _, err := a.App.Authz().Grant(t.Context(), authz.Grant{Grantee: authz.Principal("etl"), Privilege: authz.Describe,
		On: authz.Warehouse(a.Warehouse)}); err != nil {
		t.Fatal(err)
	}
	tok := a.TokenFor(t, p.ClientID, secret)
	if r := b.DoAs(t, tok, "GET", b.P("/namespaces"), nil); r.Status != 200 {
		t.Fatalf("token from node A refused by node B: %d %s", r.Status, r.Body)
	}
	// Revocation through node A's endpoint is honoured by node B at once.
	revoked := a.TokenFor(t, p.ClientID, secret)
	if r := b.DoAs(t, revoked, "GET", b.P("/namespaces"), nil); r.Status != 200 {
		t.Fatalf("second token refused before revocation: %d", r.Status)
	}
	form := url.Values{"token": {revoked}, "client_id": {p.ClientID}, "client_secret": {secret}}
	resp, err := http.PostForm(a.URL+"/v1/oauth/revoke", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("revoke on node A: %d", resp.StatusCode)
	}
	if r := b.DoAs(t, revoked, "GET", b.P("/namespaces"), nil); r.Status != 401 {
		t.Fatalf("node B accepted a token revoked on node A: %d", r.Status)
	}
	if r := b.DoAs(t, tok, "GET", b.P("/namespaces"), nil); r.Status != 200 {
		t.Fatalf("revoking one token affected another: %d", r.Status)
	}
	if err := a.App.Store().SetPrincipalDisabled(t.Context(), "etl", true); err != nil {
		t.Fatal(err)
	}
	for i, n := range ns {
		if r := n.DoAs(t, tok, "GET", n.P("/namespaces"), nil); r.Status != 401 {
			t.Errorf("node %d accepted a disabled principal's token: %d", i, r.Status)
		}
	}
}
