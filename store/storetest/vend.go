package storetest

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/vend"
)

// vendSecret returns a distinct KeySize-byte secret with bytes a text
// column would mangle.
func vendSecret(i byte) []byte {
	b := bytes.Repeat([]byte{i}, vend.KeySize)
	b[0], b[1], b[vend.KeySize-1] = 0x00, 0xff, '\''
	return b
}

// testVendKeys covers the sealing keys of the embedded credential minter
// (vend.KeyStore).
func testVendKeys(t *testing.T, e *env) {
	ids := func() []string {
		t.Helper()
		keys, err := e.s.VendKeys(e.ctx)
		must(t, err)
		if keys == nil {
			t.Fatal("VendKeys returned nil, want an empty slice")
		}
		out := []string{}
		for _, k := range keys {
			out = append(out, k.ID)
			if !bytes.Equal(k.Secret, vendSecret(k.ID[1])) {
				t.Errorf("key %s: secret %x, want %x", k.ID, k.Secret, vendSecret(k.ID[1]))
			}
			if k.Created.Location() != time.UTC {
				t.Errorf("key %s: Created %v is not UTC", k.ID, k.Created)
			}
		}
		return out
	}
	wantIDs := func(want ...string) {
		t.Helper()
		if got := ids(); !slices.Equal(got, want) {
			t.Errorf("VendKeys ids = %q, want %q", got, want)
		}
	}
	wantIDs()
	n, err := e.s.DeleteVendKeysBefore(e.ctx, e.clock.Now().Add(time.Hour))
	must(t, err)
	if n != 0 {
		t.Errorf("DeleteVendKeysBefore on an empty store = %d", n)
	}

	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(id byte, at time.Time) {
		t.Helper()
		must(t, e.s.AddVendKey(e.ctx, vend.Key{ID: "k" + string(id), Secret: vendSecret(id), Created: at}))
	}
	add('2', base.Add(2*time.Hour))
	add('1', base.Add(time.Hour).Add(123456789*time.Nanosecond).In(time.FixedZone("CEST", 2*3600)))
	add('3', base.Add(3*time.Hour))
	add('0', time.Time{}) // now: newest
	add('4', base.Add(3*time.Hour))
	wantIDs("k0", "k4", "k3", "k2", "k1") // ties by id, descending

	keys, err := e.s.VendKeys(e.ctx)
	must(t, err)
	if want := base.Add(time.Hour + 123456*time.Microsecond); !keys[4].Created.Equal(want) {
		t.Errorf("k1 Created = %v, want %v (UTC, microseconds)", keys[4].Created, want)
	}
	if want := e.clock.Now().Truncate(time.Microsecond); !keys[0].Created.Equal(want) {
		t.Errorf("k0 Created = %v, want now %v", keys[0].Created, want)
	}

	wantErr(t, e.s.AddVendKey(e.ctx, vend.Key{ID: "k1", Secret: vendSecret('9')}),
		floe.AlreadyExists, "vend key", "Vend key already exists: k1")
	for _, k := range []vend.Key{
		{Secret: vendSecret('9')},
		{ID: "k9"},
		{ID: "k9", Secret: []byte{}},
		{ID: "k9", Secret: make([]byte, vend.MaxStoredSecret+1)},
	} {
		wantErr(t, e.s.AddVendKey(e.ctx, k), floe.Invalid, "vend key", "")
	}
	wantIDs("k0", "k4", "k3", "k2", "k1")

	for _, tt := range []struct {
		before time.Time
		n      int
		want   []string
	}{
		{base.Add(time.Hour), 0, []string{"k0", "k4", "k3", "k2", "k1"}}, // strictly before
		{base.Add(2*time.Hour + time.Microsecond), 2, []string{"k0", "k4", "k3"}},
		{base.Add(2 * time.Hour), 0, []string{"k0", "k4", "k3"}},
		{e.clock.Now().Add(time.Hour), 2, []string{"k0"}}, // never the newest
		{e.clock.Now().Add(time.Hour), 0, []string{"k0"}},
	} {
		n, err := e.s.DeleteVendKeysBefore(e.ctx, tt.before)
		must(t, err)
		if n != tt.n {
			t.Errorf("DeleteVendKeysBefore(%v) = %d, want %d", tt.before, n, tt.n)
		}
		wantIDs(tt.want...)
	}
}
