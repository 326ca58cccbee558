package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/app"
)

// run runs floe with args and returns its standard output.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := Root(&out, &errOut, func(string) string { return "" })
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// TestPrincipalKeyCommands: add-key, keys, remove-key and revoke-token.
func TestPrincipalKeyCommands(t *testing.T) {
	dir := t.TempDir()
	data := []string{"--data-dir", dir, "--log-level", "error"}
	if _, err := run(t, append([]string{"principal", "create", "etl"}, data...)...); err != nil {
		t.Fatal(err)
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	pub := filepath.Join(dir, "etl.pub.pem")
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, append([]string{"principal", "add-key", "etl", pub}, data...)...)
	if err != nil || !strings.Contains(out, "alg: ES256") {
		t.Fatalf("add-key: %q %v", out, err)
	}
	kid := strings.TrimSpace(strings.TrimPrefix(strings.Split(out, "\n")[0], "kid:"))
	if _, err := run(t, append([]string{"principal", "add-key", "etl", pub}, data...)...); err == nil {
		t.Error("the same key registered twice")
	}
	if _, err := run(t, append([]string{"principal", "add-key", "ghost", pub}, data...)...); err == nil {
		t.Error("key registered for an unknown principal")
	}
	out, err = run(t, append([]string{"principal", "keys", "etl"}, data...)...)
	if err != nil || !strings.Contains(out, kid) {
		t.Fatalf("keys: %q %v", out, err)
	}
	// "--": a kid is random base64url and may start with "-".
	if _, err := run(t, append(append([]string{"principal", "remove-key"}, data...), "--", "etl", kid)...); err != nil {
		t.Fatal(err)
	}
	if out, _ := run(t, append([]string{"principal", "keys", "etl"}, data...)...); strings.Contains(out, kid) {
		t.Errorf("key still listed after remove-key: %q", out)
	}

	// revoke-token: a token issued by this data directory's keys.
	cfg := app.Defaults()
	cfg.DataDir = dir
	a, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	// (An opened data directory has no admin of its own: the token is etl's.)
	etl, err := a.Store().PrincipalByName(context.Background(), "etl")
	if err != nil {
		t.Fatal(err)
	}
	issued, err := a.Auth().Issue(context.Background(), etl, etl.Scopes)
	if err != nil {
		t.Fatal(err)
	}
	tok := issued.AccessToken
	if _, err := a.Auth().Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, append([]string{"principal", "revoke-token", tok}, data...)...)
	if err != nil || !strings.Contains(out, "revoked token") {
		t.Fatalf("revoke-token: %q %v", out, err)
	}
	if _, err := a.Auth().Verify(context.Background(), tok); err == nil {
		t.Error("revoked token still verifies")
	}
	if _, err := run(t, append([]string{"principal", "revoke-token", "garbage"}, data...)...); err == nil {
		t.Error("revoke-token accepted garbage")
	}
	if err := a.Audit().Verify(context.Background()); err != nil {
		t.Error(err)
	}
	_ = a.Close(context.Background())
}

// TestPrincipalAllowCommand: `floe principal create --allowed-cidrs` and
// `floe principal allow` set the allowlist in canonical form, list shows
// it, a bad entry is refused and no CIDR clears it.
func TestPrincipalAllowCommand(t *testing.T) {
	dir := t.TempDir()
	data := []string{"--data-dir", dir, "--log-level", "error"}
	if _, err := run(t, append([]string{"principal", "create", "etl", "--allowed-cidrs", "10.1.2.3/8,192.0.2.7"}, data...)...); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, append([]string{"principal", "list"}, data...)...)
	if err != nil || !strings.Contains(out, "10.0.0.0/8 192.0.2.7/32") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, err = run(t, append([]string{"principal", "allow", "etl", "2001:db8::/32"}, data...)...)
	if err != nil || out != "etl: 2001:db8::/32\n" {
		t.Fatalf("allow: %v %q", err, out)
	}
	if _, err := run(t, append([]string{"principal", "allow", "etl", "10.0.0.0/33"}, data...)...); err == nil || !strings.Contains(err.Error(), "10.0.0.0/33") {
		t.Fatalf("bad entry: %v", err)
	}
	if _, err := run(t, append([]string{"principal", "create", "bad", "--allowed-cidrs", "nope"}, data...)...); err == nil {
		t.Fatal("create with a bad list succeeded")
	}
	out, err = run(t, append([]string{"principal", "allow", "etl"}, data...)...)
	if err != nil || out != "etl: any address\n" {
		t.Fatalf("clear: %v %q", err, out)
	}
	out, _ = run(t, append([]string{"principal", "list"}, data...)...)
	if strings.Contains(out, "bad") || strings.Contains(out, "2001:db8") {
		t.Fatalf("list after clear:\n%s", out)
	}
}
