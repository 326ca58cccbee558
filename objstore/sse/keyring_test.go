package sse_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/floe-lake/floe/objstore/sse"
)

func b64(n int, seed byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{seed}, n))
}

func TestParseKeyring(t *testing.T) {
	k1, k2 := b64(32, 1), b64(32, 2)
	tests := []struct {
		name    string
		in      string
		wantIDs []string // nil: want an error
		errHas  string
	}{
		{name: "one key", in: "a " + k1, wantIDs: []string{"a"}},
		{name: "last is current", in: "old " + k1 + "\nnew " + k2 + "\n", wantIDs: []string{"old", "new"}},
		{name: "comments and blanks", in: "# keys\n\n  # indented comment\nx.y_z-9 " + k1 + "\n\n", wantIDs: []string{"x.y_z-9"}},
		{name: "crlf and tabs", in: "a\t" + k1 + "\r\n  b   " + k2 + "  \r\n", wantIDs: []string{"a", "b"}},
		{name: "bare key", in: "\n" + k1 + "\n", wantIDs: []string{"default"}},
		{name: "bare key with comment", in: "# generated\n" + k1, wantIDs: []string{"default"}},
		{name: "unpadded base64", in: "a " + strings.TrimRight(k1, "="), wantIDs: []string{"a"}},
		{name: "64-char id", in: strings.Repeat("i", 64) + " " + k1, wantIDs: []string{strings.Repeat("i", 64)}},

		{name: "empty", in: "", errHas: "no keys"},
		{name: "only comments", in: "# nothing\n\n", errHas: "no keys"},
		{name: "id too long", in: strings.Repeat("i", 65) + " " + k1, errHas: "line 1: key id"},
		{name: "id with slash", in: "a/b " + k1, errHas: "key id"},
		{name: "id with colon", in: "a:b " + k1, errHas: "key id"},
		{name: "non-ascii id", in: "clé " + k1, errHas: "key id"},
		{name: "swapped fields", in: k1 + " a", errHas: "key id"},
		{name: "bad base64", in: "a " + strings.Repeat("!", 44), errHas: "base64"},
		{name: "url base64", in: "a " + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)), errHas: "base64"},
		{name: "16-byte key", in: "a " + b64(16, 1), errHas: "16 bytes"},
		{name: "33-byte key", in: "a " + b64(33, 1), errHas: "33 bytes"},
		{name: "huge key", in: "a " + b64(4096, 1), errHas: "too long"},
		{name: "bare bad key", in: "notbase64!", errHas: "base64"},
		{name: "bare short key", in: b64(31, 1), errHas: "31 bytes"},
		{name: "duplicate id", in: "a " + k1 + "\na " + k2, errHas: "line 2: duplicate"},
		{name: "three fields", in: "a " + k1 + " extra", errHas: "line 1"},
		{name: "bare key among keys", in: "a " + k1 + "\n" + k2, errHas: "line 2"},
		{name: "trailing comment", in: "a " + k1 + " # note", errHas: "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kr, err := sse.ParseKeyring([]byte(tt.in))
			if tt.wantIDs == nil {
				if err == nil {
					t.Fatalf("accepted: %v", kr)
				}
				if !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %q does not mention %q", err, tt.errHas)
				}
				for _, k := range []string{k1, k2, strings.TrimRight(k1, "=")} {
					if strings.Contains(err.Error(), k) {
						t.Fatalf("error %q reveals key material", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(kr.KeyIDs(), tt.wantIDs) || kr.CurrentKeyID() != tt.wantIDs[len(tt.wantIDs)-1] {
				t.Fatalf("ids %v current %q, want %v", kr.KeyIDs(), kr.CurrentKeyID(), tt.wantIDs)
			}
			if s := kr.String(); strings.Contains(s, k1) || strings.Contains(s, k2) || !strings.Contains(s, kr.CurrentKeyID()) {
				t.Fatalf("String() = %q", s)
			}
		})
	}
}

func TestLocalKeyring_WrapUnwrap(t *testing.T) {
	ctx := context.Background()
	both := mustKeyring(t, keyLine("a", 1)+keyLine("b", 2))
	dek := bytes.Repeat([]byte{7}, 32)
	id, wrapped, err := both.Wrap(ctx, dek)
	if err != nil || id != "b" {
		t.Fatalf("Wrap = %q, %v", id, err)
	}
	if got, err := both.Unwrap(ctx, "b", wrapped); err != nil || !bytes.Equal(got, dek) {
		t.Fatalf("Unwrap: %v", err)
	}
	if _, err := both.Unwrap(ctx, "zz", wrapped); !errors.Is(err, sse.ErrUnknownKey) {
		t.Fatalf("unknown id: %v", err)
	}
	// A wrapped key cannot be relabelled, even to a key with the same material.
	twin := mustKeyring(t, keyLine("a", 2)+keyLine("b", 2))
	if _, err := twin.Unwrap(ctx, "a", wrapped); !errors.Is(err, sse.ErrCorrupt) {
		t.Fatalf("relabelled: %v", err)
	}
	for i := range wrapped {
		bad := clone(wrapped)
		bad[i] ^= 1
		if _, err := both.Unwrap(ctx, "b", bad); !errors.Is(err, sse.ErrCorrupt) {
			t.Fatalf("flip at %d: %v", i, err)
		}
	}
	for _, n := range []int{0, 1, 28} {
		if _, err := both.Unwrap(ctx, "b", wrapped[:n]); !errors.Is(err, sse.ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	if _, _, err := both.Wrap(ctx, nil); err == nil {
		t.Fatal("wrapped an empty key")
	}
	_, w2, _ := both.Wrap(ctx, dek)
	if bytes.Equal(w2, wrapped) {
		t.Fatal("two wraps are identical")
	}
}

func TestLoadKeyring(t *testing.T) {
	content := []byte("# test\nk " + b64(32, 5) + "\n")
	tests := []struct {
		name   string
		mode   fs.FileMode
		data   []byte
		errHas string
	}{
		{"0600", 0o600, content, ""},
		{"0400", 0o400, content, ""},
		{"0700", 0o700, content, ""},
		{"0640", 0o640, content, "group or others"},
		{"0604", 0o604, content, "group or others"},
		{"0620", 0o620, content, "group or others"},
		{"0644", 0o644, content, "group or others"},
		{"bad content", 0o600, []byte("k short"), "line 1"},
		{"too large", 0o600, bytes.Repeat([]byte("#"), 1<<20+1), "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "keys")
			if err := os.WriteFile(p, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tt.mode); err != nil {
				t.Fatal(err)
			}
			kr, err := sse.LoadKeyring(p)
			if tt.errHas == "" {
				if err != nil || kr.CurrentKeyID() != "k" {
					t.Fatalf("LoadKeyring: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("LoadKeyring: %v, want error mentioning %q", err, tt.errHas)
			}
		})
	}
	if _, err := sse.LoadKeyring(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := sse.LoadKeyring(dir); err == nil || !strings.Contains(err.Error(), "regular file") {
		t.Fatalf("directory: %v", err)
	}
}

func TestGenerateKey(t *testing.T) {
	a, err := sse.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sse.GenerateKey()
	raw, err := base64.StdEncoding.DecodeString(a)
	if err != nil || len(raw) != 32 || a == b {
		t.Fatalf("GenerateKey = %q (%d bytes, %v), second %q", a, len(raw), err, b)
	}
	kr, err := sse.ParseKeyring([]byte(a))
	if err != nil || kr.CurrentKeyID() != "default" {
		t.Fatalf("generated key does not parse: %v", err)
	}
}
