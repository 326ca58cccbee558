package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/sharing"
)

// runEnv runs the floe CLI with the environment env.
func runEnv(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := Root(&out, &errOut, func(k string) string { return env[k] })
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// TestShareCommands: floe share and floe recipient run against a real
// server as an ordinary principal holding CREATE_SHARE and MANAGE_GRANTS
// on one table; the profile file is written with mode 0600 and its token
// authenticates until it is rotated out or revoked; another principal is
// refused with the missing right named; and no token reaches the audit log.
func TestShareCommands(t *testing.T) {
	f := testkit.Start(t)
	ctx := t.Context()
	f.CreateTable(t, "crm", "accounts")
	f.CreateTable(t, "crm", "leads")
	newPrincipal := func(name string) map[string]string {
		_, secret, err := f.App.Auth().CreatePrincipal(ctx, name, nil, false, name+"-id", "")
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{"FLOE_URL": f.URL, "FLOE_CREDENTIAL": name + "-id:" + secret}
	}
	alice, bob := newPrincipal("alice"), newPrincipal("bob")
	for _, g := range []authz.Grant{
		{Grantee: authz.Principal("alice"), Privilege: authz.CreateShare, On: authz.Warehouse(f.Warehouse)},
		{Grantee: authz.Principal("alice"), Privilege: authz.ManageGrants, On: authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"})},
	} {
		if _, err := f.App.Authz().Grant(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	profile := filepath.Join(dir, "acme.share")
	// A file there already, readable by all: the token must not land in it
	// with that mode.
	if err := os.WriteFile(profile, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	var token, tokenID string
	readProfile := func(path string) sharing.Profile {
		t.Helper()
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("profile file mode %v, want 0600", st.Mode().Perm())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var p sharing.Profile
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("profile %s: %v", b, err)
		}
		if p.ShareCredentialsVersion != 1 || p.Endpoint != f.URL+"/delta-sharing/" || !strings.HasPrefix(p.BearerToken, sharing.TokenPrefix) {
			t.Errorf("profile %+v", p)
		}
		return p
	}
	authOK := func(tok string) error {
		_, err := f.App.Sharing().Authenticate(ctx, tok, netip.MustParseAddr("127.0.0.1"))
		return err
	}
	idRe := regexp.MustCompile(`token id (rt_[0-9a-f]+)`)
	steps := []struct {
		name    string
		env     map[string]string
		args    []string
		wantOut []string
		wantErr []string
		after   func(out string)
	}{
		{name: "no CREATE_SHARE", env: bob, args: []string{"share", "create", "s1"},
			wantErr: []string{`principal "bob" lacks CREATE_SHARE on warehouse "floe"`}},
		{name: "create", env: alice, args: []string{"share", "create", "s1", "--comment", "for acme"},
			wantOut: []string{`created share "s1" of warehouse "floe" (owner alice)`}},
		{name: "add a table it may grant", env: alice, args: []string{"share", "add", "s1", "table", "crm.accounts", "--as", "pub.accts", "--history"},
			wantOut: []string{"added table crm.accounts to share \"s1\" as pub.accts (id "}},
		{name: "add a table it may not grant", env: alice, args: []string{"share", "add", "s1", "table", "crm.leads"},
			wantErr: []string{`principal "alice" lacks MANAGE_GRANTS on table "crm.leads"`, "requires the right to grant SELECT"}},
		{name: "create recipient", env: alice, args: []string{"recipient", "create", "acme", "--property", "org=ACME", "--profile-out", profile},
			wantOut: []string{`created recipient "acme"`, "profile written to " + profile, "uri " + f.URL + "/shares/{share}/iceberg"},
			after: func(out string) {
				p := readProfile(profile)
				token, tokenID = p.BearerToken, idRe.FindStringSubmatch(out)[1]
				if strings.Contains(out, token) {
					t.Errorf("the token was printed as well as written: %s", out)
				}
				if err := authOK(token); err != nil {
					t.Errorf("profile token: %v", err)
				}
			}},
		{name: "someone else's share", env: bob, args: []string{"share", "grant", "s1", "TO", "acme"},
			wantErr: []string{`principal "bob" does not own share "s1" (owner "alice")`}},
		{name: "grant", env: alice, args: []string{"share", "grant", "s1", "TO", "acme"}, wantOut: []string{`granted share "s1" to recipient "acme"`}},
		{name: "grant syntax", env: alice, args: []string{"share", "grant", "s1", "FOR", "acme"}, wantErr: []string{"want: floe share grant SHARE TO RECIPIENT"}},
		{name: "show", env: alice, args: []string{"share", "show", "s1"},
			wantOut: []string{"share s1 (warehouse floe, owner alice", "comment: for acme", "table", "crm.accounts", "pub.accts", "true", "recipients: acme"}},
		{name: "list", env: alice, args: []string{"share", "list"}, wantOut: []string{"s1", "alice", "for acme"}},
		{name: "bob lists none", env: bob, args: []string{"share", "list", "--json"}, wantOut: []string{`"shares": []`}},
		{name: "recipient show", env: alice, args: []string{"recipient", "show", "acme"},
			after: func(out string) {
				if !strings.Contains(out, tokenID) || !strings.Contains(out, "shares: s1") || strings.Contains(out, token) {
					t.Errorf("recipient show: %s", out)
				}
			}},
		{name: "recipient list", env: alice, args: []string{"recipient", "list"}, wantOut: []string{"acme", "alice", "never"}},
		{name: "rotate at once", env: alice, args: []string{"recipient", "rotate", "acme", "--grace", "0", "--profile-out", profile},
			wantOut: []string{`rotated the token of recipient "acme"`},
			after: func(string) {
				p := readProfile(profile)
				if p.BearerToken == token {
					t.Error("rotation kept the token")
				}
				if err := authOK(token); floe.KindOf(err) != floe.Unauthenticated {
					t.Errorf("old token after rotation: %v", err)
				}
				if err := authOK(p.BearerToken); err != nil {
					t.Errorf("new token: %v", err)
				}
				token = p.BearerToken
			}},
		{name: "rotate without a file prints the credential once", env: alice, args: []string{"recipient", "rotate", "acme"},
			wantOut: []string{"shown only now", `"bearerToken": "floe_rcpt_`, `"uri": "` + f.URL + `/shares/s1/iceberg"`, `"warehouse": "s1"`}},
		{name: "revoke", env: alice, args: []string{"recipient", "revoke", "acme"}, wantOut: []string{`revoked 2 token(s) of recipient "acme"`},
			after: func(string) {
				if err := authOK(token); floe.KindOf(err) != floe.Unauthenticated {
					t.Errorf("revoked token: %v", err)
				}
			}},
		{name: "remove", env: alice, args: []string{"share", "remove", "s1", "pub.accts"}, wantOut: []string{`removed pub.accts from share "s1"`}},
		{name: "revoke share", env: alice, args: []string{"share", "revoke", "s1", "FROM", "acme"}, wantOut: []string{`revoked share "s1" from recipient "acme"`}},
		{name: "drop", env: alice, args: []string{"share", "drop", "s1"}, wantOut: []string{`dropped share "s1"`}},
		{name: "show dropped", env: alice, args: []string{"share", "show", "s1"}, wantErr: []string{`share "s1" does not exist`}},
	}
	for _, s := range steps {
		out, err := runEnv(t, s.env, s.args...)
		if s.wantErr != nil {
			if err == nil {
				t.Fatalf("%s: no error, output %q", s.name, out)
			}
			for _, w := range s.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q lacks %q", s.name, err, w)
				}
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		for _, w := range s.wantOut {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output %q lacks %q", s.name, out, w)
			}
		}
		if s.after != nil {
			s.after(out)
		}
	}
	recs, err := f.App.Store().AuditQuery(ctx, audit.Query{Action: "mgmt.*", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]int{}
	for _, r := range recs {
		actions[r.Action+"/"+r.Outcome]++
		if strings.Contains(string(r.Detail), sharing.TokenPrefix) {
			t.Errorf("audit record %s carries a token: %s", r.Action, r.Detail)
		}
	}
	for _, want := range []string{"mgmt.share.create/success", "mgmt.share.create/denied", "mgmt.share.object.add/success",
		"mgmt.share.object.add/denied", "mgmt.recipient.create/success", "mgmt.share.grant/success", "mgmt.share.grant/denied",
		"mgmt.recipient.rotate/success", "mgmt.recipient.revoke/success", "mgmt.share.object.remove/success",
		"mgmt.share.revoke/success", "mgmt.share.drop/success"} {
		if actions[want] == 0 {
			t.Errorf("no audit record %s (have %v)", want, actions)
		}
	}
}
