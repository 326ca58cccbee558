package keywrap_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/floe-lake/floe/internal/keywrap"
	"github.com/floe-lake/floe/objstore/sse"
)

func keyring(t testing.TB, lines string) *sse.LocalKeyring {
	t.Helper()
	kr, err := sse.ParseKeyring([]byte(lines))
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

const (
	k1 = "k1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
	k2 = "k2 ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=\n"
)

func TestSealOpen(t *testing.T) {
	ctx := context.Background()
	s := keywrap.New(keyring(t, k1))
	secret := []byte("-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n")
	blob, err := s.Seal(ctx, "auth.signing-key", "kid1", secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(blob, []byte("secret")) || !keywrap.IsSealed(blob) {
		t.Fatalf("sealed blob leaks the secret or is not recognised: %q", blob)
	}
	if id, err := keywrap.KeyID(blob); err != nil || id != "k1" {
		t.Errorf("KeyID = %q, %v; want k1", id, err)
	}
	got, err := s.Open(ctx, "auth.signing-key", "kid1", blob)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	// Two seals of one secret differ (fresh data key and nonce).
	blob2, _ := s.Seal(ctx, "auth.signing-key", "kid1", secret)
	if bytes.Equal(blob, blob2) {
		t.Error("two seals of one secret are equal")
	}
}

// TestOpenRefuses covers the swaps and tampering a writer of the store
// could try: a blob moved to another row or purpose, relabelled with another
// key id, bit flips, truncation; and plaintext.
func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	s := keywrap.New(keyring(t, k1+k2))
	blob, err := s.Seal(ctx, "vend.sealing-key", "v1", bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	relabel := bytes.Clone(blob)
	copy(relabel[9:11], "k1") // the key id "k2" sits after magic and length
	for _, tt := range []struct {
		name, purpose, id string
		blob              []byte
		want              error
	}{
		{"other id", "vend.sealing-key", "v2", blob, sse.ErrCorrupt},
		{"other purpose", "auth.signing-key", "v1", blob, sse.ErrCorrupt},
		{"relabelled key id", "vend.sealing-key", "v1", relabel, sse.ErrCorrupt},
		{"flipped last byte", "vend.sealing-key", "v1", flip(blob, len(blob)-1), sse.ErrCorrupt},
		{"flipped wrapped key", "vend.sealing-key", "v1", flip(blob, 14), sse.ErrCorrupt},
		{"truncated", "vend.sealing-key", "v1", blob[:len(blob)-20], sse.ErrCorrupt},
		{"header only", "vend.sealing-key", "v1", blob[:12], sse.ErrCorrupt},
		{"plaintext", "vend.sealing-key", "v1", bytes.Repeat([]byte{7}, 32), keywrap.ErrNotSealed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Open(ctx, tt.purpose, tt.id, tt.blob); !errors.Is(err, tt.want) {
				t.Errorf("Open: %v, want %v", err, tt.want)
			}
		})
	}
	// A wrapper without the key: ErrUnknownKey.
	other := keywrap.New(keyring(t, k1))
	if _, err := other.Open(ctx, "vend.sealing-key", "v1", blob); !errors.Is(err, sse.ErrUnknownKey) {
		t.Errorf("Open without the key: %v, want ErrUnknownKey", err)
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 1
	return c
}

// memTable is a keywrap.Table in memory.
type memTable struct{ rows map[string][]byte }

func (m *memTable) Records(context.Context) ([]keywrap.Record, error) {
	var out []keywrap.Record
	for id, b := range m.rows {
		out = append(out, keywrap.Record{ID: id, Blob: b})
	}
	return out, nil
}

func (m *memTable) Replace(_ context.Context, id string, old, new []byte) (bool, error) {
	if !bytes.Equal(m.rows[id], old) {
		return false, nil
	}
	m.rows[id] = new
	return true, nil
}

// TestRewrapAll migrates plaintext rows and moves sealed ones to the new
// current key; a node holding both keys reads every row meanwhile.
func TestRewrapAll(t *testing.T) {
	ctx := context.Background()
	old := keywrap.New(keyring(t, k1))
	sealed, err := old.Seal(ctx, "p", "a", []byte("secret a"))
	if err != nil {
		t.Fatal(err)
	}
	tab := &memTable{rows: map[string][]byte{"a": sealed, "b": []byte("secret b")}}

	res, err := keywrap.RewrapAll(ctx, old, "p", tab)
	if err != nil || res != (keywrap.Result{Scanned: 2, Sealed: 1}) {
		t.Fatalf("RewrapAll under k1 = %+v, %v; want b sealed", res, err)
	}
	if bytes.Contains(tab.rows["b"], []byte("secret")) {
		t.Fatal("plaintext row b not sealed")
	}

	rotated := keywrap.New(keyring(t, k1+k2))
	res, err = keywrap.RewrapAll(ctx, rotated, "p", tab)
	if err != nil || res != (keywrap.Result{Scanned: 2, Rewrapped: 2}) {
		t.Fatalf("RewrapAll under k2 = %+v, %v; want both re-wrapped", res, err)
	}
	for id, b := range tab.rows {
		if kid, _ := keywrap.KeyID(b); kid != "k2" {
			t.Errorf("row %s wrapped under %q, want k2", id, kid)
		}
		if got, err := rotated.Open(ctx, "p", id, b); err != nil || string(got) != "secret "+id {
			t.Errorf("open %s = %q, %v", id, got, err)
		}
		// Only k2 opens it now.
		if _, err := old.Open(ctx, "p", id, b); !errors.Is(err, sse.ErrUnknownKey) {
			t.Errorf("k1 alone opens re-wrapped row %s: %v", id, err)
		}
	}
	// Idempotent.
	if res, err = keywrap.RewrapAll(ctx, rotated, "p", tab); err != nil || res.Rewrapped+res.Sealed != 0 {
		t.Errorf("second RewrapAll = %+v, %v; want nothing to do", res, err)
	}
}

func TestSealBounds(t *testing.T) {
	s := keywrap.New(keyring(t, k1))
	for _, n := range []int{0, keywrap.MaxSecret + 1} {
		if _, err := s.Seal(context.Background(), "p", "i", make([]byte, n)); err == nil {
			t.Errorf("Seal of %d bytes succeeded", n)
		}
	}
}

// FuzzOpen feeds arbitrary blobs (a store row is untrusted input) to Open:
// it never panics and never opens anything it did not seal.
func FuzzOpen(f *testing.F) {
	s := keywrap.New(keyring(f, k1))
	blob, err := s.Seal(context.Background(), "p", "i", []byte("secret"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(blob)
	f.Add([]byte("floe-kw1"))
	f.Add([]byte("floe-kw1\x02k1\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := s.Open(context.Background(), "p", "i", b)
		if err == nil && !bytes.Equal(b, blob) && string(got) != "secret" {
			t.Fatalf("opened a blob it did not seal: %q", got)
		}
		_ = keywrap.IsSealed(b)
	})
}
