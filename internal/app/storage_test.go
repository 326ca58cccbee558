package app

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/objstore/sse"
)

func openTestApp(t *testing.T, dir string) *App {
	t.Helper()
	cfg := Defaults()
	cfg.DataDir = dir
	cfg.Listen, cfg.S3Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Maintenance = false
	cfg.BootstrapCredential = "admin:admin-secret-123"
	a, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestEncryptionKeyRotation: the default key file is created on first
// start; after a new key is appended, rewrap moves every object to it
// without rewriting data, and the old key can then be dropped.
func TestEncryptionKeyRotation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := openTestApp(t, dir)
	secret := []byte(strings.Repeat("customer 4711 plaintext ", 5000))
	if _, err := a.Objects().Put(ctx, "floe", "ns/t/data/f.parquet", bytes.NewReader(secret), bucket.PutOptions{Size: -1}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "warehouse", "ns", "t", "data", "f.parquet")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("customer 4711")) || !sse.IsEncrypted(raw) {
		t.Fatal("object is not encrypted on disk")
	}
	keyFile := filepath.Join(dir, "keys", "warehouse.keys")
	st, err := os.Stat(keyFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	old, _ := os.ReadFile(keyFile)
	k, err := sse.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, append(old, []byte("k2 "+k+"\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	a = openTestApp(t, dir)
	res, err := a.RewrapObjects(ctx)
	if err != nil || res.Rewrapped != 1 {
		t.Fatalf("rewrap: %+v %v", res, err)
	}
	if res2, err := a.RewrapObjects(ctx); err != nil || res2.Rewrapped != 0 {
		t.Fatalf("second rewrap: %+v %v", res2, err)
	}
	_ = a.Close(ctx)
	after, _ := os.ReadFile(file)
	if !bytes.Equal(after[sse.HeaderSize:], raw[sse.HeaderSize:]) {
		t.Fatal("rewrap changed the data segments")
	}
	// Only the new key now: the object still reads.
	if err := os.WriteFile(keyFile, []byte("k2 "+k+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a = openTestApp(t, dir)
	defer a.Close(ctx)
	obj, err := a.Objects().Get(ctx, "floe", "ns/t/data/f.parquet", bucket.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	if !bytes.Equal(got, secret) {
		t.Fatal("object does not read back after rotation")
	}
}
