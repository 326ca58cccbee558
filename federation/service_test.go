package federation_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/federation"
	"github.com/floe-lake/floe/internal/keywrap"
	"github.com/floe-lake/floe/objstore/sse"
	"github.com/floe-lake/floe/store/sqlstore"
)

var (
	admin = authz.Subject{Principal: "admin", Admin: true}
	alice = authz.Subject{PrincipalID: "id-alice", Principal: "alice"}
)

// newService returns a Service over a SQLite store, with one configured
// catalog ("conf") and the local warehouse "floe".
func newService(t *testing.T, configured int) (*federation.Service, *sqlstore.Store, *int) {
	t.Helper()
	st, err := sqlstore.Open(t.Context(), filepath.Join(t.TempDir(), "floe.db"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	kr := testKeyring(t)
	var conf []federation.Catalog
	for i := range configured {
		conf = append(conf, federation.Catalog{Name: fmt.Sprintf("conf%d", i), Type: "rest", URI: "https://conf.example", Auth: "none"})
	}
	changes := new(int)
	svc := federation.NewService(federation.ServiceOptions{Store: st, Sealer: keywrap.New(kr), Configured: conf, Reserved: []string{"floe"},
		Getenv:  func(k string) string { return map[string]string{"ACME_SECRET": "from-env"}[k] },
		Changed: func(context.Context) { *changes++ }})
	return svc, st, changes
}

func testKeyring(t *testing.T) *sse.LocalKeyring {
	t.Helper()
	kr, err := sse.ParseKeyring([]byte("k1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"))
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// TestServiceValidation: what Create accepts and refuses, with the
// message naming the rule.
func TestServiceValidation(t *testing.T) {
	svc, _, _ := newService(t, 1)
	ok := federation.Spec{Name: "acme", URI: "https://acme.example", Warehouse: "w", Auth: "oauth2", ClientID: "c", Secret: "s3cret"}
	with := func(f func(*federation.Spec)) federation.Spec { s := ok; f(&s); return s }
	for _, tc := range []struct {
		name string
		spec federation.Spec
		want string // "" for success
	}{
		{"oauth2 with a secret", ok, ""},
		{"oauth2 with an env", with(func(s *federation.Spec) { s.Name, s.Secret, s.SecretEnv = "acme2", "", "ACME_SECRET" }), ""},
		{"bearer", with(func(s *federation.Spec) { s.Name, s.Auth, s.ClientID = "tok", "bearer", "" }), ""},
		{"none", with(func(s *federation.Spec) { s.Name, s.Auth, s.Secret = "open", "none", "" }), ""},
		{"taken, other case", with(func(s *federation.Spec) { s.Name = "ACME" }), "already exists"},
		{"shadows the warehouse", with(func(s *federation.Spec) { s.Name = "FLOE" }), "taken by a warehouse or another foreign catalog"},
		{"shadows a configured catalog", with(func(s *federation.Spec) { s.Name = "conf0" }), "taken by a warehouse or another foreign catalog"},
		{"bad name", with(func(s *federation.Spec) { s.Name = "1acme" }), "name must be a letter"},
		{"bad uri", with(func(s *federation.Spec) { s.Name, s.URI = "x1", "ftp://acme" }), "uri must be an absolute http(s) URL"},
		{"credentials in the uri", with(func(s *federation.Spec) { s.Name, s.URI = "x2", "https://u:p@acme" }), "without credentials"},
		{"type", with(func(s *federation.Spec) { s.Name, s.Type = "x3", "glue" }), `type "glue" is not supported`},
		{"ttl", with(func(s *federation.Spec) { s.Name, s.CacheTTL = "x4", 2*time.Hour }), "cache_ttl 2h0m0s is above 1h0m0s"},
		{"no client id", with(func(s *federation.Spec) { s.Name, s.ClientID = "x5", "" }), "auth oauth2 needs client_id"},
		{"no secret", with(func(s *federation.Spec) { s.Name, s.Secret = "x6", "" }), "auth oauth2 needs its client secret"},
		{"both", with(func(s *federation.Spec) { s.Name, s.SecretEnv = "x7", "ACME_SECRET" }), "not both"},
		{"empty env", with(func(s *federation.Spec) { s.Name, s.Secret, s.SecretEnv = "x8", "", "UNSET_VAR" }), "UNSET_VAR (client_secret_env) is empty"},
		{"bad env", with(func(s *federation.Spec) { s.Name, s.Secret, s.SecretEnv = "x9", "", "A-B" }), "not a valid name"},
		{"none with a secret", with(func(s *federation.Spec) { s.Name, s.Auth = "x10", "none" }), "auth none takes no secret"},
		{"sigv4 with a secret", with(func(s *federation.Spec) { s.Name, s.Auth, s.Region = "x11", "sigv4", "us-east-1" }), "auth sigv4 takes no secret"},
		{"sigv4", with(func(s *federation.Spec) {
			s.Name, s.Auth, s.Region, s.Secret, s.ClientID = "glue1", "sigv4", "us-east-1", "", ""
			s.RoleARN, s.ExternalID = "arn:aws:iam::123456789012:role/r", "ext-1"
		}), ""},
		{"sigv4 without a region", with(func(s *federation.Spec) { s.Name, s.Auth, s.Secret, s.ClientID = "x14", "sigv4", "", "" }), "auth sigv4 needs region"},
		{"sigv4 wrong region", with(func(s *federation.Spec) {
			s.Name, s.Auth, s.Region, s.Secret, s.ClientID = "x15", "sigv4", "EU", "", ""
		}), "auth sigv4 needs region"},
		{"unknown auth", with(func(s *federation.Spec) { s.Name, s.Auth = "x16", "kerberos" }), `auth "kerberos" is not one of none, bearer, oauth2, sigv4`},
		{"oauth2 writes", with(func(s *federation.Spec) {
			s.Name, s.Writes, s.WriteClientID, s.WriteSecret = "w1", true, "writer", "w-secret"
		}), ""},
		{"oauth2 writes, write secret from env", with(func(s *federation.Spec) {
			s.Name, s.Writes, s.WriteClientID, s.WriteSecretEnv = "w2", true, "writer", "ACME_SECRET"
		}), ""},
		{"bearer writes", with(func(s *federation.Spec) {
			s.Name, s.Auth, s.ClientID, s.Writes, s.WriteSecret = "w3", "bearer", "", true, "write-token"
		}), ""},
		{"sigv4 writes", with(func(s *federation.Spec) {
			s.Name, s.Auth, s.Region, s.Secret, s.ClientID = "w4", "sigv4", "us-east-1", "", ""
			s.Writes, s.WriteRoleARN = true, "arn:aws:iam::123456789012:role/w"
		}), ""},
		{"writes without a write secret", with(func(s *federation.Spec) { s.Name, s.Writes, s.WriteClientID = "x17", true, "writer" }),
			"writes need a separate write credential"},
		{"writes without a write client", with(func(s *federation.Spec) { s.Name, s.Writes, s.WriteSecret = "x18", true, "w-secret" }),
			"auth oauth2 takes write_client_id"},
		{"writes with the read client", with(func(s *federation.Spec) {
			s.Name, s.Writes, s.WriteClientID, s.WriteSecret = "x19", true, "c", "w-secret"
		}), "write_client_id is the read client_id"},
		{"writes with the read token", with(func(s *federation.Spec) {
			s.Name, s.Auth, s.ClientID, s.Writes, s.WriteSecret = "x20", "bearer", "", true, "s3cret"
		}), "the write token is the read token"},
		{"write secret without writes", with(func(s *federation.Spec) { s.Name, s.WriteClientID, s.WriteSecret = "x21", "writer", "w" }),
			"write client secret is set but writes is not"},
		{"write client without writes", with(func(s *federation.Spec) { s.Name, s.WriteClientID = "x22", "writer" }),
			"write_client_id is set but writes is not"},
		{"none writes", with(func(s *federation.Spec) { s.Name, s.Auth, s.Secret, s.Writes = "x23", "none", "", true }),
			"auth none has none"},
		{"sigv4 writes without a role", with(func(s *federation.Spec) {
			s.Name, s.Auth, s.Region, s.Secret, s.ClientID, s.Writes = "x24", "sigv4", "us-east-1", "", "", true
		}), "auth sigv4 takes write_role_arn"},
		{"sigv4 writes with the read role", with(func(s *federation.Spec) {
			s.Name, s.Auth, s.Region, s.Secret, s.ClientID, s.Writes = "x25", "sigv4", "us-east-1", "", "", true
			s.RoleARN, s.WriteRoleARN = "arn:aws:iam::123456789012:role/r", "arn:aws:iam::123456789012:role/r"
		}), "write_role_arn is the read role_arn"},
		{"sigv4 write secret", with(func(s *federation.Spec) {
			s.Name, s.Auth, s.Region, s.Secret, s.ClientID, s.Writes, s.WriteSecret = "x26", "sigv4", "us-east-1", "", "", true, "w"
		}), "auth sigv4 takes no secret"},
		{"write secret with white space", with(func(s *federation.Spec) {
			s.Name, s.Writes, s.WriteClientID, s.WriteSecret = "x27", true, "writer", " w"
		}), "write secret begins or ends with white space"},
		{"write client for bearer", with(func(s *federation.Spec) {
			s.Name, s.Auth, s.ClientID, s.Writes, s.WriteSecret, s.WriteClientID = "x28", "bearer", "", true, "wt", "writer"
		}), "write_client_id does not apply to auth bearer"},
		{"token url", with(func(s *federation.Spec) { s.Name, s.TokenURL = "x12", "not a url" }), "token_url must be an absolute http(s) URL"},
		{"long secret", with(func(s *federation.Spec) { s.Name, s.Secret = "x13", strings.Repeat("s", federation.MaxSecret+1) }), "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := svc.Create(t.Context(), admin, tc.spec)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if e.Source != federation.SourceAPI || e.CreatedBy != "admin" || e.Type != "rest" {
					t.Errorf("entry %+v", e)
				}
				return
			}
			if err == nil || !strings.Contains(floe.PublicMessage(err), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.Contains(floe.PublicMessage(err), "\x00") {
				t.Errorf("message leaks the internal variable name: %q", floe.PublicMessage(err))
			}
		})
	}
}

// TestServiceLimit: 64 foreign catalogs in all, configured ones included:
// the 64th is created, the 65th refused naming the limit; a drop frees a
// place.
func TestServiceLimit(t *testing.T) {
	const configured = 4
	svc, _, _ := newService(t, configured)
	ctx := t.Context()
	spec := func(i int) federation.Spec {
		return federation.Spec{Name: fmt.Sprintf("c%d", i), URI: "https://r.example", Auth: "bearer", Secret: "t"}
	}
	for i := configured; i < federation.MaxCatalogs; i++ {
		if _, err := svc.Create(ctx, admin, spec(i)); err != nil {
			t.Fatalf("catalog %d: %v", i+1, err)
		}
	}
	_, err := svc.Create(ctx, admin, spec(federation.MaxCatalogs))
	if floe.KindOf(err) != floe.Unprocessable || !strings.Contains(floe.PublicMessage(err), "at most 64 foreign catalogs (4 configured") {
		t.Fatalf("catalog 65: %v", err)
	}
	ls, err := svc.List(ctx, admin)
	if err != nil || len(ls) != federation.MaxCatalogs {
		t.Fatalf("list: %d, %v", len(ls), err)
	}
	if err := svc.Drop(ctx, admin, "c4"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, admin, spec(federation.MaxCatalogs)); err != nil {
		t.Fatalf("after a drop: %v", err)
	}
}

// TestServicePrivilege: a principal that is not an administrator is
// refused every operation, with what it lacks named; nothing is stored.
func TestServicePrivilege(t *testing.T) {
	svc, st, changes := newService(t, 1)
	ctx := t.Context()
	spec := federation.Spec{Name: "acme", URI: "https://acme.example", Auth: "none"}
	for name, op := range map[string]func() error{
		"create": func() error { _, err := svc.Create(ctx, alice, spec); return err },
		"list":   func() error { _, err := svc.List(ctx, alice); return err },
		"show":   func() error { _, err := svc.Get(ctx, alice, "conf0"); return err },
		"drop":   func() error { return svc.Drop(ctx, alice, "conf0") },
	} {
		err := op()
		if floe.KindOf(err) != floe.Forbidden || !strings.Contains(floe.PublicMessage(err), `"alice" is not an administrator`) ||
			!strings.Contains(floe.PublicMessage(err), "requires an admin principal") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if ls, _ := st.ListForeignCatalogs(ctx); len(ls) != 0 || *changes != 0 {
		t.Errorf("stored %v, changes %d", ls, *changes)
	}
}

// TestServiceSecrets: a passed secret is stored sealed (never in clear)
// and Load opens it; an env secret is read at load; show never carries a
// secret; a configured catalog cannot be dropped at run time.
func TestServiceSecrets(t *testing.T) {
	svc, st, changes := newService(t, 1)
	ctx := t.Context()
	if _, err := svc.Create(ctx, admin, federation.Spec{Name: "sealed", URI: "https://a.example", Auth: "oauth2", ClientID: "c", Secret: "very-secret-value"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, admin, federation.Spec{Name: "env", URI: "https://b.example", Auth: "bearer", SecretEnv: "ACME_SECRET"}); err != nil {
		t.Fatal(err)
	}
	r, err := st.ForeignCatalog(ctx, "sealed")
	if err != nil {
		t.Fatal(err)
	}
	if !keywrap.IsSealed(r.SealedSecret) || strings.Contains(string(r.SealedSecret), "very-secret-value") {
		t.Fatalf("stored secret not sealed: %q", r.SealedSecret)
	}
	e, err := svc.Get(ctx, admin, "SEALED")
	if err != nil || !e.SecretSet || strings.Contains(fmt.Sprintf("%+v", e), "very-secret") {
		t.Fatalf("show %+v %v", e, err)
	}
	ls, err := svc.Load(ctx)
	if err != nil || len(ls) != 2 {
		t.Fatalf("load %v %v", ls, err)
	}
	if ls[0].Catalog.Token != "from-env" || ls[1].Catalog.ClientSecret != "very-secret-value" || ls[1].ID != r.ID {
		t.Errorf("loaded %+v", ls)
	}
	if err := svc.Drop(ctx, admin, "conf0"); floe.KindOf(err) != floe.Unprocessable || !strings.Contains(floe.PublicMessage(err), "in the server's configuration") {
		t.Errorf("drop configured: %v", err)
	}
	if err := svc.Drop(ctx, admin, "nope"); floe.KindOf(err) != floe.NotFound {
		t.Errorf("drop unknown: %v", err)
	}
	if *changes != 2 {
		t.Errorf("changes %d, want 2", *changes)
	}

	// Writes: the write secret is sealed under a purpose of its own, shown
	// as set, and loaded beside the read secret; a SigV4 catalog keeps its
	// AWS settings and write role.
	if _, err := svc.Create(ctx, admin, federation.Spec{Name: "writer", URI: "https://w.example", Auth: "oauth2", ClientID: "reader",
		Secret: "read-secret-value", Writes: true, WriteClientID: "writer", WriteSecret: "write-secret-value"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, admin, federation.Spec{Name: "lake", URI: "https://glue.example/iceberg", Auth: "sigv4", Region: "eu-west-1",
		Writes: true, WriteRoleARN: "arn:aws:iam::123456789012:role/w", ExternalID: ""}); err != nil {
		t.Fatal(err)
	}
	w, err := st.ForeignCatalog(ctx, "writer")
	if err != nil {
		t.Fatal(err)
	}
	if !keywrap.IsSealed(w.SealedWriteSecret) || strings.Contains(string(w.SealedWriteSecret), "write-secret-value") {
		t.Fatalf("stored write secret not sealed: %q", w.SealedWriteSecret)
	}
	if _, err := keywrap.New(testKeyring(t)).Open(ctx, federation.SealPurpose, w.ID, w.SealedWriteSecret); err == nil {
		t.Error("the write secret opens under the read secret's purpose")
	}
	e, err = svc.Get(ctx, admin, "writer")
	if err != nil || !e.Writes || !e.WriteSecretSet || e.WriteClientID != "writer" || strings.Contains(fmt.Sprintf("%+v", e), "secret-value") {
		t.Fatalf("show writer %+v %v", e, err)
	}
	ls, err = svc.Load(ctx)
	if err != nil || len(ls) != 4 {
		t.Fatalf("load %v %v", ls, err)
	}
	byName := map[string]federation.Catalog{}
	for _, l := range ls {
		byName[l.Catalog.Name] = l.Catalog
	}
	if c := byName["writer"]; c.ClientSecret != "read-secret-value" || c.WriteClientSecret != "write-secret-value" || !c.Writes || c.WriteClientID != "writer" {
		t.Errorf("loaded writer %+v", c)
	}
	if c := byName["lake"]; c.Auth != "sigv4" || c.Region != "eu-west-1" || c.SigningName != "glue" || c.WriteRoleARN != "arn:aws:iam::123456789012:role/w" || !c.Writes {
		t.Errorf("loaded lake %+v", c)
	}
}
