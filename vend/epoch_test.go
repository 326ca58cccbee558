package vend_test

import (
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/vend"
)

// TestEpochSealed: the embedded minter stamps the revocation version it is
// given on each credential, inside the sealed token, and Resolve returns
// it; a caller cannot choose it.
func TestEpochSealed(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	epoch := int64(41)
	e, err := vend.NewEmbedded(t.Context(), &memKeys{}, vend.EmbeddedOptions{Now: fakeclock.New(t0).Now, Logger: testLogger(t),
		Epoch: func() int64 { return epoch }})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []int64{41, 42, 1 << 40} {
		epoch = want
		s := session()
		s.Epoch = 7 // ignored: the minter sets it
		c, got := mint(t, e, s, 0)
		if got.Epoch != want {
			t.Errorf("minted session epoch %d, want %d", got.Epoch, want)
		}
		if r := resolve(t, e, c); r.Epoch != want {
			t.Errorf("resolved epoch %d, want %d", r.Epoch, want)
		}
	}
	// Without Epoch, credentials carry 0: every later revocation of their
	// principal or table refuses them.
	plain := newEmbedded(t, &memKeys{}, fakeclock.New(t0), 0)
	c, _ := mint(t, plain, session(), 0)
	if r := resolve(t, plain, c); r.Epoch != 0 {
		t.Errorf("epoch %d without EmbeddedOptions.Epoch", r.Epoch)
	}
}
