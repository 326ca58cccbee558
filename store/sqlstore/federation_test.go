package sqlstore

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/federation"
)

// TestForeignCatalogs: create, get (without regard to case), list, the
// limit, AlreadyExists and NotFound, the sealed secret's compare and swap
// and drop, on every backend.
func TestForeignCatalogs(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			s := openForTest(t, be.dsn(t), Options{})
			at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			rec := func(id, name string, secret []byte) federation.Record {
				return federation.Record{ID: id, Name: name, Type: "rest", URI: "https://" + name + ".example", Warehouse: "wh",
					Auth: federation.AuthOAuth2, ClientID: "cid", Scope: "catalog", TokenURL: "https://t.example/token",
					CacheTTL: 45 * time.Second, SealedSecret: secret, CreatedBy: "admin", CreatedAt: at}
			}
			a := rec("fc_a", "Acme", []byte("sealed-a"))
			if err := s.CreateForeignCatalog(ctx, a, 2); err != nil {
				t.Fatal(err)
			}
			// A SigV4 catalog with writes: its AWS settings and write identity
			// are kept, and the write secret's compare and swap works.
			g := rec("fc_g", "glue", nil)
			g.Auth, g.ClientID, g.Scope, g.TokenURL = federation.AuthSigV4, "", "", ""
			g.Region, g.SigningName, g.RoleARN, g.ExternalID = "eu-west-1", "glue", "arn:aws:iam::123456789012:role/r", "ext-1"
			g.Writes, g.WriteRoleARN, g.WriteExternalID = true, "arn:aws:iam::123456789012:role/w", "ext-2"
			if err := s.CreateForeignCatalog(ctx, g, 3); err != nil {
				t.Fatal(err)
			}
			if got, err := s.ForeignCatalog(ctx, "GLUE"); err != nil || fmt.Sprint(got) != fmt.Sprint(g) {
				t.Errorf("sigv4 record %+v %v\nwant %+v", got, err, g)
			}
			o := rec("fc_o", "writer", []byte("sealed-read"))
			o.Writes, o.WriteClientID, o.SealedWriteSecret = true, "wcid", []byte("sealed-write")
			if err := s.CreateForeignCatalog(ctx, o, 3); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.ReplaceForeignCatalogWriteSecret(ctx, "fc_o", []byte("sealed-read"), []byte("x")); err != nil || ok {
				t.Errorf("replace the write secret with the read one as old: %v %v", ok, err)
			}
			if ok, err := s.ReplaceForeignCatalogWriteSecret(ctx, "fc_o", []byte("sealed-write"), []byte("sealed-write2")); err != nil || !ok {
				t.Errorf("replace the write secret: %v %v", ok, err)
			}
			if got, _ := s.ForeignCatalog(ctx, "writer"); !bytes.Equal(got.SealedWriteSecret, []byte("sealed-write2")) ||
				!bytes.Equal(got.SealedSecret, []byte("sealed-read")) || !got.Writes || got.WriteClientID != "wcid" {
				t.Errorf("writer after replace %+v", got)
			}
			for _, n := range []string{"glue", "writer"} {
				if err := s.DropForeignCatalog(ctx, n); err != nil {
					t.Fatal(err)
				}
			}
			b := rec("fc_b", "beta", nil)
			b.Auth, b.ClientID, b.Scope, b.TokenURL, b.SecretEnv, b.CacheTTL = federation.AuthBearer, "", "", "", "BETA_TOKEN", -time.Second
			if err := s.CreateForeignCatalog(ctx, b, 2); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name string
				r    federation.Record
				want floe.Kind
			}{
				{"name taken, other case", rec("fc_c", "ACME", nil), floe.AlreadyExists},
				{"limit", rec("fc_d", "delta", nil), floe.Unprocessable},
			} {
				if err := s.CreateForeignCatalog(ctx, tc.r, 2); floe.KindOf(err) != tc.want {
					t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
				}
			}
			got, err := s.ForeignCatalog(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(a) || !got.CreatedAt.Equal(at) {
				t.Errorf("got %+v\nwant %+v", got, a)
			}
			ls, err := s.ListForeignCatalogs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ls) != 2 || ls[0].Name != "Acme" || ls[1].Name != "beta" || ls[1].SecretEnv != "BETA_TOKEN" ||
				ls[1].CacheTTL != -time.Second || len(ls[1].SealedSecret) != 0 {
				t.Errorf("list %+v", ls)
			}
			if ok, err := s.ReplaceForeignCatalogSecret(ctx, "fc_a", []byte("other"), []byte("x")); err != nil || ok {
				t.Errorf("replace with a stale old: %v %v", ok, err)
			}
			if ok, err := s.ReplaceForeignCatalogSecret(ctx, "fc_a", []byte("sealed-a"), []byte("sealed-a2")); err != nil || !ok {
				t.Errorf("replace: %v %v", ok, err)
			}
			if got, _ := s.ForeignCatalog(ctx, "Acme"); !bytes.Equal(got.SealedSecret, []byte("sealed-a2")) {
				t.Errorf("secret after replace %q", got.SealedSecret)
			}
			if err := s.DropForeignCatalog(ctx, "ACME"); err != nil {
				t.Fatal(err)
			}
			if err := s.DropForeignCatalog(ctx, "acme"); floe.KindOf(err) != floe.NotFound {
				t.Errorf("drop again: %v", err)
			}
			if _, err := s.ForeignCatalog(ctx, "acme"); floe.KindOf(err) != floe.NotFound {
				t.Errorf("get dropped: %v", err)
			}
			if err := s.CreateForeignCatalog(ctx, rec("fc_d", "delta", nil), 2); err != nil {
				t.Errorf("create below the limit again: %v", err)
			}
		})
	}
}
