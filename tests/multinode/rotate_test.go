package multinode

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/floe-lake/floe/mgmtapi"
)

// tokenAt asks node base's token endpoint for a token: the status, the
// token and the OAuth error.
func tokenAt(t *testing.T, base, id, secret string) (int, string, string) {
	t.Helper()
	resp, err := http.PostForm(base+"/v1/oauth/tokens", url.Values{"grant_type": {"client_credentials"},
		"client_id": {id}, "client_secret": {secret}, "scope": {"catalog"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out.AccessToken, out.Error
}

// TestNodes_RotateSecretAndRevokeTokens: a secret rotated on node A is
// refused by node B's token endpoint at once and the new one works there;
// revoking the principal's tokens on node B refuses, on node A at once,
// every token issued before (also one node B cached as verified), and new
// tokens from either node work on both.
func TestNodes_RotateSecretAndRevokeTokens(t *testing.T) {
	ns := nodes(t, 2)
	a, b := ns[0], ns[1]
	cred := a.NewPrincipal(t, "deployer")
	early := b.TokenFor(t, cred.ClientID, cred.Secret)
	for i, n := range ns { // both nodes verify (and cache) the token
		if r := n.DoAs(t, early, "GET", "/v1/config", nil); r.Status != 200 {
			t.Fatalf("node %d before: %d %s", i, r.Status, r.Body)
		}
	}

	var rot mgmtapi.NewPrincipal
	r := a.Do(t, "POST", "/api/v1/principals/deployer/rotate-secret", nil)
	if r.Status != 200 {
		t.Fatalf("rotate-secret on node A: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &rot)
	if st, _, e := tokenAt(t, b.URL, cred.ClientID, cred.Secret); st != 401 || e != "invalid_client" {
		t.Errorf("old secret at node B after the rotation on node A: %d %s", st, e)
	}
	st, fresh, e := tokenAt(t, b.URL, cred.ClientID, rot.ClientSecret)
	if st != 200 {
		t.Fatalf("new secret at node B: %d %s", st, e)
	}

	bToken := b.Token(t)
	if r := b.DoAs(t, bToken, "POST", "/api/v1/principals/deployer/revoke-tokens", nil); r.Status != 200 {
		t.Fatalf("revoke-tokens on node B: %d %s", r.Status, r.Body)
	}
	for i, n := range ns {
		for j, tok := range []string{early, fresh} {
			if r := n.DoAs(t, tok, "GET", "/v1/config", nil); r.Status != 401 {
				t.Errorf("node %d accepted token %d issued before the revocation: %d", i, j, r.Status)
			}
		}
	}
	for i, n := range ns {
		st, tok, e := tokenAt(t, n.URL, cred.ClientID, rot.ClientSecret)
		if st != 200 {
			t.Fatalf("new token from node %d: %d %s", i, st, e)
		}
		for j, m := range ns {
			if r := m.DoAs(t, tok, "GET", "/v1/config", nil); r.Status != 200 {
				t.Errorf("node %d refused a token node %d issued after the revocation: %d %s", j, i, r.Status, r.Body)
			}
		}
	}
}
