package app_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"database/sql"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/keywrap"
	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/objstore"
	"github.com/floe-lake/floe/objstore/sse"
	"github.com/floe-lake/floe/store/sqlstore"
	"github.com/floe-lake/floe/vend"
)

// storeDump is what an attacker reads from a copy of the metadata store:
// every row of the key tables and the admin principal.
type storeDump struct {
	signing                         []stolenRow // newest first
	vend                            []stolenRow // newest first
	adminID, adminClient, adminName string
}

type stolenRow struct {
	id   string
	blob []byte
}

// Blob returns the stored bytes.
func (r stolenRow) Blob() []byte { return r.blob }

// dumpStore reads the key tables and the admin principal through db.
func dumpStore(t *testing.T, db *sql.DB) storeDump {
	t.Helper()
	var d storeDump
	read := func(q string) []stolenRow {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("dump %q: %v", q, err)
		}
		defer rows.Close()
		var out []stolenRow
		for rows.Next() {
			var r stolenRow
			if err := rows.Scan(&r.id, &r.blob); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	d.signing = read("SELECT kid, private_pem FROM signing_keys ORDER BY created_at DESC")
	d.vend = read("SELECT id, secret FROM vend_keys ORDER BY created_at DESC")
	if len(d.signing) == 0 || len(d.vend) == 0 {
		t.Fatalf("the store copy holds %d signing keys and %d vend keys; want some of each", len(d.signing), len(d.vend))
	}
	if err := db.QueryRow("SELECT id, client_id, name FROM principals WHERE name = 'admin'").Scan(&d.adminID, &d.adminClient, &d.adminName); err != nil {
		t.Fatalf("dump admin principal: %v", err)
	}
	return d
}

// copySQLite copies the SQLite store files (database and WAL) of a running
// node to a fresh directory, as a backup or a stolen disk image would, and
// opens the copy.
func copySQLite(t *testing.T, path string) *sql.DB {
	t.Helper()
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "copy.db"+suffix), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "copy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// pgDumpCopy copies the PostgreSQL store at dsn (a schema, named by its
// search_path) the way a backup does, with pg_dump, restores the dump with
// psql into a new database on the same server, as an attacker holding the
// backup would, and returns a DSN of the restored copy.
func pgDumpCopy(t *testing.T, dsn string) string {
	t.Helper()
	for _, tool := range []string{"pg_dump", "psql"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to copy the PostgreSQL store as a backup would (Debian: postgresql-client): %v", tool, err)
		}
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	schema := q.Get("search_path")
	q.Del("search_path")
	u.RawQuery = q.Encode()
	server := u.String()
	dump := filepath.Join(t.TempDir(), "store.sql")
	if out, err := exec.Command("pg_dump", "--no-owner", "--no-privileges", "--schema", schema, "--file", dump, "--dbname", server).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("signing_keys")) || !bytes.Contains(b, []byte("vend_keys")) {
		t.Fatalf("the dump (%d bytes) holds no key tables", len(b))
	}
	if bytes.Contains(b, []byte("PRIVATE KEY")) {
		t.Errorf("the pg_dump of the store holds a plaintext PEM private key")
	}
	admin, err := sql.Open("pgx", server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	copyDB := "floe_stolen_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	if _, err := admin.Exec("CREATE DATABASE " + copyDB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + copyDB + " WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", copyDB, err)
		}
	})
	cu := *u
	cu.Path = "/" + copyDB
	if out, err := exec.Command("psql", "--quiet", "--set", "ON_ERROR_STOP=1", "--file", dump, cu.String()).CombinedOutput(); err != nil {
		t.Fatalf("psql restore of the dump: %v\n%s", err, out)
	}
	cq := cu.Query()
	cq.Set("search_path", schema)
	cu.RawQuery = cq.Encode()
	return cu.String()
}

// usableSigningKey parses a stored blob the way Floe's own code stored it
// before keys were wrapped: PKCS#8 PEM. It also looks for a PEM block or a
// PKCS#8 DER structure anywhere in the blob.
func usableSigningKey(blob []byte) crypto.Signer {
	candidates := [][]byte{}
	if i := bytes.Index(blob, []byte("-----BEGIN")); i >= 0 {
		if blk, _ := pem.Decode(blob[i:]); blk != nil {
			candidates = append(candidates, blk.Bytes)
		}
	}
	for i := range blob {
		if blob[i] == 0x30 { // an ASN.1 SEQUENCE may start here
			candidates = append(candidates, blob[i:])
		}
	}
	for _, der := range candidates {
		if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
			if s, ok := k.(crypto.Signer); ok {
				return s
			}
		}
	}
	return nil
}

// forgeAdminToken signs an admin access token for the dumped admin with the
// first usable signing key found, or, finding none, with a fresh key under
// the newest key id (the best an attacker can then do). It reports whether
// a stolen key was used.
func forgeAdminToken(t *testing.T, d storeDump, issuer string) (string, bool) {
	t.Helper()
	var key crypto.Signer
	kid := d.signing[0].id
	for _, r := range d.signing {
		if key = usableSigningKey(r.blob); key != nil {
			kid = r.id
			break
		}
	}
	stolen := key != nil
	if !stolen {
		var err error
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	method := jwt.SigningMethod(jwt.SigningMethodES256)
	if _, ok := key.(*rsa.PrivateKey); ok {
		method = jwt.SigningMethodRS256
	}
	now := time.Now()
	claims := jwt.MapClaims{"iss": issuer, "sub": d.adminID, "aud": issuer, "iat": now.Unix(), "nbf": now.Unix(),
		"exp": now.Add(10 * time.Minute).Unix(), "jti": uuid.NewString(), "client_id": d.adminClient,
		"name": d.adminName, "scope": "catalog", "adm": true}
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	signed, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return signed, stolen
}

// stolenKeys is a vend.KeyStore holding one key found in the dump.
type stolenKeys struct{ k vend.Key }

func (s stolenKeys) VendKeys(context.Context) ([]vend.Key, error)                 { return []vend.Key{s.k}, nil }
func (s stolenKeys) AddVendKey(context.Context, vend.Key) error                   { return errors.New("read-only") }
func (s stolenKeys) DeleteVendKeysBefore(context.Context, time.Time) (int, error) { return 0, nil }

// vendCandidates are the 32-byte secrets an attacker tries from a stored
// vend key: the column itself when it is 32 bytes (as Floe stored it before
// keys were wrapped), else every 32-byte window of it.
func vendCandidates(blob []byte) [][]byte {
	if len(blob) == vend.KeySize {
		return [][]byte{blob}
	}
	var out [][]byte
	for i := 0; i+vend.KeySize <= len(blob); i++ {
		out = append(out, blob[i:i+vend.KeySize])
	}
	return out
}

// TestStoreCopyCannotSignOrMint is the attack of issue 15 item 2: with a
// copy of the metadata store alone (SQLite file; a dump of every key table
// on PostgreSQL), sign an admin token and mint an embedded S3 credential.
// The server must refuse both.
func TestStoreCopyCannotSignOrMint(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var dsn string
			f := testkit.Start(t, func(c *app.Config) {
				if backend == "postgres" {
					dsn = pgtest.Fresh(t, pgtest.ServerDSN(t))
					c.Store = dsn
				}
			})
			tb := f.CreateTable(t, "stolen", "t")
			var db *sql.DB
			if backend == "sqlite" {
				db = copySQLite(t, f.App.Config().Store)
			} else {
				var err error
				if db, err = sql.Open("pgx", pgDumpCopy(t, dsn)); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
			}
			d := dumpStore(t, db)
			for _, r := range append(append([]stolenRow(nil), d.signing...), d.vend...) {
				if bytes.Contains(r.blob, []byte("PRIVATE KEY")) {
					t.Errorf("the store holds key %s in plaintext PEM", r.id)
				}
			}

			// 1. A forged admin token against the REST catalog.
			tok, stolen := forgeAdminToken(t, d, f.URL)
			req, _ := http.NewRequest("GET", f.URL+f.P("/namespaces"), nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("forged admin token (signed with a stolen key: %v): status %d, want 401", stolen, resp.StatusCode)
			}

			// 2. A forged S3 credential against the embedded S3 endpoint.
			_, key, _ := objstore.ParseLocation(tb.MetadataLocation)
			ctx := context.Background()
			tried := 0
			for _, r := range d.vend {
				for _, secret := range vendCandidates(r.blob) {
					tried++
					em, err := vend.NewEmbedded(ctx, stolenKeys{vend.Key{ID: r.id, Secret: secret, Created: time.Now()}},
						vend.EmbeddedOptions{KeyRotation: 1000 * time.Hour})
					if err != nil {
						t.Fatal(err)
					}
					cr, _, err := em.Mint(ctx, vend.Session{Principal: d.adminName, PrincipalID: d.adminID,
						Grants: []vend.Grant{{Bucket: f.Warehouse, Prefix: "stolen/", Access: vend.ReadWrite}}}, time.Hour)
					if err != nil {
						t.Fatal(err)
					}
					cli := s3.New(s3.Options{BaseEndpoint: aws.String(f.App.S3URL()), Region: f.App.Config().Region, UsePathStyle: true,
						Credentials: credentials.NewStaticCredentialsProvider(cr.AccessKeyID, cr.SecretAccessKey, cr.SessionToken)})
					out, err := cli.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.Warehouse), Key: aws.String(key)})
					if err == nil {
						io.Copy(io.Discard, out.Body)
						out.Body.Close()
						t.Fatalf("a credential minted with vend key %s found in the store copy read %s", r.id, key)
					}
					// Refused as AWS refuses a session token that does not
					// open: 400 InvalidToken (or 403 if it ever did open).
					var re interface{ HTTPStatusCode() int }
					var ae smithy.APIError
					if !errors.As(err, &re) || !errors.As(err, &ae) ||
						!(re.HTTPStatusCode() == http.StatusForbidden || (re.HTTPStatusCode() == http.StatusBadRequest && ae.ErrorCode() == "InvalidToken")) {
						t.Fatalf("forged credential: %v, want 400 InvalidToken or 403", err)
					}
				}
			}
			if tried == 0 {
				t.Fatal("no vend key candidate tried")
			}
		})
	}
}

// oldStore makes a store the way Floe wrote it before keys were wrapped:
// plaintext signing and vend keys, an admin principal, a token and a
// credential issued under them.
func oldStore(t *testing.T, path string) (token string, cred vend.Credentials) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	as := auth.New(st, auth.Options{})
	if err := as.Init(ctx); err != nil {
		t.Fatal(err)
	}
	p, _, err := as.CreatePrincipal(ctx, "admin", nil, true, "test-admin", "test-admin-secret")
	if err != nil {
		t.Fatal(err)
	}
	em, err := vend.NewEmbedded(ctx, st, vend.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cred, _, err = em.Mint(ctx, vend.Session{Principal: p.Name, PrincipalID: p.ID,
		Grants: []vend.Grant{{Bucket: "floe", Prefix: "old/", Access: vend.Read}}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := st.SigningKeys(ctx)
	if len(keys) != 1 || !bytes.HasPrefix(keys[0].PrivatePEM, []byte("-----BEGIN PRIVATE KEY")) {
		t.Fatalf("the old store does not hold a plaintext key: %d keys", len(keys))
	}
	// The issuer is fixed per server; an old token names the issuer it
	// was issued under, which the restarted node keeps (public_url).
	as.SetIssuer("http://floe.test")
	tok, err := as.Issue(ctx, p, p.Scopes)
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken, cred
}

// TestMigratePlaintextKeys starts Floe on a store written by the old code:
// its plaintext keys are sealed on first start, no plaintext is left, and
// the tokens and credentials issued before keep working.
func TestMigratePlaintextKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	tok, cred := oldStore(t, path)
	f := testkit.Start(t, func(c *app.Config) { c.Store = path; c.PublicURL = "http://floe.test" })

	db := copySQLite(t, path)
	d := dumpStore(t, db)
	for _, r := range append(d.signing, d.vend...) {
		if !keywrap.IsSealed(r.Blob()) {
			t.Errorf("key %s is still plaintext after the first start", r.id)
		}
	}
	// No plaintext key anywhere in the database file.
	raw, _ := os.ReadFile(path)
	wal, _ := os.ReadFile(path + "-wal")
	if bytes.Contains(append(raw, wal...), []byte("PRIVATE KEY")) {
		t.Error("the database files still hold a plaintext private key after the migration")
	}

	// The old token still verifies.
	req, _ := http.NewRequest("GET", f.URL+f.P("/namespaces"), nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("token issued before the migration: %d, want 200", resp.StatusCode)
	}
	// The old credential still opens: a LIST under its grant succeeds.
	cli := s3.New(s3.Options{BaseEndpoint: aws.String(f.App.S3URL()), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(cred.AccessKeyID, cred.SecretAccessKey, cred.SessionToken)})
	if _, err := cli.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("floe"), Prefix: aws.String("old/")}); err != nil {
		t.Errorf("credential minted before the migration: %v", err)
	}
}

// TestRotateWrappingKey appends a new warehouse key and restarts a node:
// every secret is re-wrapped under it, while a node still running with only
// the old key keeps verifying tokens and minting credentials (it holds its
// keys unwrapped), and the restarted node verifies the old tokens.
func TestRotateWrappingKey(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "keys", "warehouse.keys")
	f := testkit.Start(t, func(c *app.Config) { c.DataDir = dir; c.PublicURL = "http://floe.test" })
	tok := f.Token(t)
	ctx := context.Background()
	// A foreign catalog's secret, sealed under the first key.
	if r := f.Do(t, "POST", "/api/v1/catalogs", map[string]any{"name": "acme", "uri": "http://127.0.0.1:9", "auth": "bearer",
		"token": "remote-token", "writes": true, "write_token": "remote-write-token"}); r.Status != 201 {
		t.Fatalf("create a foreign catalog: %d %s", r.Status, r.Body)
	}
	before, err := keyIDs(ctx, f.App.Store())
	if err != nil {
		t.Fatal(err)
	}

	// The operator appends a new key (the last is current) ...
	line, err := sse.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(keyFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(fh, "k-new %s\n", line)
	fh.Close()
	// ... and (re)starts a node: it re-wraps on start.
	cfg := f.App.Config()
	cfg.Listen, cfg.S3Listen, cfg.SQLListen, cfg.AdminListen = "127.0.0.1:0", "127.0.0.1:0", "off", "off"
	cfg.Maintenance = false
	b, err := app.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	after, err := keyIDs(ctx, b.Store())
	if err != nil {
		t.Fatal(err)
	}
	for id, kid := range after {
		if kid != "k-new" {
			t.Errorf("secret %s wrapped under %q after the rotation, want k-new (before: %q)", id, kid, before[id])
		}
	}
	if len(after) != len(before) || len(after) < 3 {
		t.Fatalf("secrets before %v, after %v", before, after)
	}
	// The re-wrapped foreign catalog secret opens on the restarted node.
	if ls, err := b.Federation().Load(ctx); err != nil || len(ls) != 1 || ls[0].Catalog.Token != "remote-token" ||
		ls[0].Catalog.WriteToken != "remote-write-token" {
		t.Errorf("foreign catalog after the rotation: %+v, %v", ls, err)
	}
	if err := b.Store().DropForeignCatalog(ctx, "acme"); err != nil {
		t.Error(err)
	}
	// The restarted node verifies the token issued before.
	if _, err := b.Auth().Verify(ctx, tok); err != nil {
		t.Errorf("new node: token issued before the rotation: %v", err)
	}
	// The node still on the old key file keeps serving.
	if r := f.DoAs(t, tok, "GET", f.P("/namespaces"), nil); r.Status != 200 {
		t.Errorf("old node after the rotation: %d", r.Status)
	}
	f.CreateTable(t, "rot", "t") // vends a credential with its cached key
	if _, err := f.App.Auth().Issue(ctx, mustPrincipal(t, f), nil); err != nil {
		t.Errorf("old node cannot sign after the rotation: %v", err)
	}
	// `floe keys rewrap` on a rotated store has nothing left to do.
	if res, err := b.RewrapSecrets(ctx); err != nil || res.Sealed+res.Rewrapped != 0 {
		t.Errorf("RewrapSecrets after the rotation = %+v, %v", res, err)
	}
}

func mustPrincipal(t *testing.T, f *testkit.Floe) auth.Principal {
	t.Helper()
	p, err := f.App.Store().PrincipalByName(context.Background(), "admin")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// keyIDs returns the wrapping key id of every secret of the store.
func keyIDs(ctx context.Context, st *sqlstore.Store) (map[string]string, error) {
	out := map[string]string{}
	sk, err := st.SigningKeys(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range sk {
		out["signing/"+k.KID], _ = keywrap.KeyID(k.PrivatePEM)
	}
	vk, err := st.VendKeys(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range vk {
		out["vend/"+k.ID], _ = keywrap.KeyID(k.Secret)
	}
	fc, err := st.ListForeignCatalogs(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range fc {
		if len(r.SealedSecret) > 0 {
			out["foreign/"+r.ID], _ = keywrap.KeyID(r.SealedSecret)
		}
		if len(r.SealedWriteSecret) > 0 {
			out["foreign-write/"+r.ID], _ = keywrap.KeyID(r.SealedWriteSecret)
		}
	}
	return out, nil
}
