package vend_test

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/vend"
)

// t0 is when every test clock starts.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// memKeys is an in-memory vend.KeyStore that can be made to fail.
type memKeys struct {
	mu   sync.Mutex
	keys []vend.Key
	// failAdd and failLoad, when set, are returned by AddVendKey and
	// VendKeys.
	failAdd, failLoad error
	// loads and adds count the calls of VendKeys and AddVendKey.
	loads, adds atomic.Int64
}

func (m *memKeys) VendKeys(ctx context.Context) ([]vend.Key, error) {
	m.loads.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failLoad != nil {
		return nil, m.failLoad
	}
	out := make([]vend.Key, len(m.keys))
	for i, k := range m.keys {
		out[i] = vend.Key{ID: k.ID, Secret: slices.Clone(k.Secret), Created: k.Created}
	}
	slices.SortFunc(out, func(a, b vend.Key) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out, nil
}

func (m *memKeys) AddVendKey(ctx context.Context, k vend.Key) error {
	m.adds.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failAdd != nil {
		return m.failAdd
	}
	for _, have := range m.keys {
		if have.ID == k.ID {
			return floe.E(floe.AlreadyExists, "vend key", "Vend key already exists: %s", k.ID)
		}
	}
	m.keys = append(m.keys, vend.Key{ID: k.ID, Secret: slices.Clone(k.Secret), Created: k.Created})
	return nil
}

func (m *memKeys) DeleteVendKeysBefore(ctx context.Context, t time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.keys) == 0 {
		return 0, nil
	}
	newest := m.keys[0]
	for _, k := range m.keys {
		if k.Created.After(newest.Created) || (k.Created.Equal(newest.Created) && k.ID > newest.ID) {
			newest = k
		}
	}
	n := len(m.keys)
	m.keys = slices.DeleteFunc(m.keys, func(k vend.Key) bool { return k.ID != newest.ID && k.Created.Before(t) })
	return n - len(m.keys), nil
}

// ids returns the ids of the stored keys, newest first.
func (m *memKeys) ids(t *testing.T) []string {
	t.Helper()
	keys, err := m.VendKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	return ids
}

func (m *memKeys) setFailAdd(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failAdd = err
}

func (m *memKeys) setFailLoad(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failLoad = err
}

// testLogger logs warnings and errors to t.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newEmbedded returns an Embedded on ks with clock and rotation (0: default).
func newEmbedded(t testing.TB, ks vend.KeyStore, clock *fakeclock.Clock, rotation time.Duration) *vend.Embedded {
	t.Helper()
	e, err := vend.NewEmbedded(t.Context(), ks, vend.EmbeddedOptions{Now: clock.Now, Logger: testLogger(t), KeyRotation: rotation})
	if err != nil {
		t.Fatalf("NewEmbedded: %v", err)
	}
	return e
}

// session returns a typical session for table crm.accounts.
func session() vend.Session {
	return vend.Session{
		Principal: "ann", PrincipalID: "p-ann", TokenID: "jti-1", Table: "crm.accounts",
		Grants: []vend.Grant{{Bucket: "lake", Prefix: "crm/accounts-0a1b/", Access: vend.ReadWrite}},
	}
}

func mint(t testing.TB, m vend.Minter, s vend.Session, ttl time.Duration) (vend.Credentials, vend.Session) {
	t.Helper()
	c, got, err := m.Mint(t.Context(), s, ttl)
	if err != nil {
		t.Fatalf("Mint: %v", err)
	}
	return c, got
}

// resolve resolves c on e and checks the secret.
func resolve(t testing.TB, e *vend.Embedded, c vend.Credentials) vend.Session {
	t.Helper()
	s, secret, err := e.Resolve(t.Context(), c.AccessKeyID, c.SessionToken)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if secret != c.SecretAccessKey {
		t.Fatalf("Resolve secret = %q, want the minted %q", secret, c.SecretAccessKey)
	}
	return s
}

// wantResolveErr checks that resolving fails with want.
func wantResolveErr(t testing.TB, e *vend.Embedded, accessKeyID, token string, want error) {
	t.Helper()
	s, secret, err := e.Resolve(t.Context(), accessKeyID, token)
	if !errors.Is(err, want) {
		t.Fatalf("Resolve(%.40q, %.60q) = %+v, %q, %v; want %v", accessKeyID, token, s, secret, err, want)
	}
	if secret != "" || s.AccessKeyID != "" || s.Grants != nil {
		t.Fatalf("Resolve failed with %v but returned a session %+v or secret", err, s)
	}
	if floe.KindOf(err) != floe.Unauthenticated {
		t.Fatalf("Resolve error %v has kind %v, want unauthenticated", err, floe.KindOf(err))
	}
}

// keyIDOf returns the key id a token was sealed under.
func keyIDOf(t testing.TB, token string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(token, "FV1."))
	if err != nil || len(raw) < 1 || len(raw) < 1+int(raw[0]) {
		t.Fatalf("token %q: %v", token, err)
	}
	return string(raw[1 : 1+raw[0]])
}

func decodeToken(t testing.TB, token string) []byte {
	t.Helper()
	raw, err := base64.RawURLEncoding.Strict().DecodeString(strings.TrimPrefix(token, "FV1."))
	if err != nil {
		t.Fatalf("decode token: %v", err)
	}
	return raw
}

func encodeToken(raw []byte) string {
	return "FV1." + base64.RawURLEncoding.EncodeToString(raw)
}
