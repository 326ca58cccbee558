package sharing_test

import (
	"testing"
	"time"

	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/store/sqlstore"
	"github.com/floe-lake/floe/vend"
)

// mintSession mints, on the node's embedded minter, a read credential for
// r's table as a protocol server does (TokenID = the recipient token's id),
// resolves it back as the S3 endpoint would, and returns that session and
// one of another token of r.
func mintSession(t *testing.T, node *sqlstore.Store, r sharing.Recipient, epoch int64) (vend.Session, vend.Session) {
	t.Helper()
	m, err := vend.NewEmbedded(t.Context(), node, vend.EmbeddedOptions{Epoch: func() int64 { return epoch }})
	must(t, err)
	mint := func(tokenID string) vend.Session {
		s := vend.Session{Principal: sharing.CredentialPrincipal(r.Name), TokenID: tokenID, Table: "crm.accounts",
			Grants: []vend.Grant{{Bucket: wh, Prefix: "crm/accounts/", Access: vend.Read}}}
		creds, _, err := m.Mint(t.Context(), s, 15*time.Minute)
		must(t, err)
		got, _, err := m.Resolve(t.Context(), creds.AccessKeyID, creds.SessionToken)
		must(t, err)
		if got.TokenID != tokenID {
			t.Fatalf("resolved token id %q, want %q", got.TokenID, tokenID)
		}
		return got
	}
	return mint(r.TokenID), mint("rt_other")
}
