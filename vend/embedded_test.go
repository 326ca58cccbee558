package vend_test

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/vend"
)

var (
	accessKeyRE = regexp.MustCompile(`^FLOE[A-Z2-7]{16}$`)
	secretRE    = regexp.MustCompile(`^[A-Za-z0-9+/]{40}$`)
	tokenRE     = regexp.MustCompile(`^FV1\.[A-Za-z0-9_-]+$`)
)

func TestMintResolve(t *testing.T) {
	clock := fakeclock.New(t0.Add(123 * time.Millisecond))
	ks := &memKeys{}
	e := newEmbedded(t, ks, clock, 0)
	many := session()
	many.Grants = append(many.Grants,
		vend.Grant{Bucket: "lake", Prefix: "crm/contacts-9/", Access: vend.Read},
		vend.Grant{Bucket: "other", Prefix: "x/y$*?/", Access: vend.ReadWrite})
	unicode := vend.Session{Principal: "zoë \"q\" <x>", Table: "ns.tåble", Grants: []vend.Grant{{Bucket: "b", Prefix: "é/", Access: vend.Read}}}
	for _, tt := range []struct {
		name string
		s    vend.Session
		ttl  time.Duration
		want time.Duration // lifetime
	}{
		{"default ttl", session(), 0, time.Hour},
		{"short ttl", session(), time.Minute, 15 * time.Minute},
		{"two hours", session(), 2 * time.Hour, 2 * time.Hour},
		{"long ttl", session(), 48 * time.Hour, 12 * time.Hour},
		{"many grants", many, 0, time.Hour},
		{"minimal", vend.Session{Grants: []vend.Grant{{Bucket: "b", Prefix: "p/", Access: vend.Read}}}, 0, time.Hour},
		{"unicode", unicode, 0, time.Hour},
		{"ignores given ids", func() vend.Session {
			s := session()
			s.ID, s.AccessKeyID, s.Expires = "mine", "FLOEAAAAAAAAAAAAAAAA", t0.Add(100*time.Hour)
			return s
		}(), 0, time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, got := mint(t, e, tt.s, tt.ttl)
			if !accessKeyRE.MatchString(c.AccessKeyID) || !secretRE.MatchString(c.SecretAccessKey) || !tokenRE.MatchString(c.SessionToken) {
				t.Errorf("credentials %q / %q / %q are not well-formed", c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
			}
			wantExp := clock.Now().Add(tt.want).Truncate(time.Second)
			if !c.Expires.Equal(wantExp) || !got.Expires.Equal(wantExp) || c.Expires.Location() != time.UTC {
				t.Errorf("Expires = %v / %v, want %v", c.Expires, got.Expires, wantExp)
			}
			if got.ID == "" || got.ID == "mine" || got.AccessKeyID != c.AccessKeyID {
				t.Errorf("minted session ID %q, AccessKeyID %q (credential's %q)", got.ID, got.AccessKeyID, c.AccessKeyID)
			}
			want := tt.s
			want.ID, want.AccessKeyID, want.Expires = got.ID, got.AccessKeyID, got.Expires
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Mint session = %+v, want %+v", got, want)
			}
			if res := resolve(t, e, c); !reflect.DeepEqual(res, got) {
				t.Errorf("Resolve session = %+v, want the minted %+v", res, got)
			}
		})
	}

	// Each credential is unique, and the minted session does not share
	// the caller's grants.
	s := session()
	c1, s1 := mint(t, e, s, 0)
	c2, s2 := mint(t, e, s, 0)
	if c1.AccessKeyID == c2.AccessKeyID || c1.SecretAccessKey == c2.SecretAccessKey || c1.SessionToken == c2.SessionToken || s1.ID == s2.ID {
		t.Errorf("two mints share parts: %+v %+v", c1, c2)
	}
	s.Grants[0].Prefix = "changed/"
	if s1.Grants[0].Prefix != "crm/accounts-0a1b/" {
		t.Error("the minted session shares the caller's grants slice")
	}
	if got := ks.ids(t); len(got) != 1 {
		t.Errorf("store has keys %q, want one", got)
	}
}

func TestMintInvalid(t *testing.T) {
	e := newEmbedded(t, &memKeys{}, fakeclock.New(t0), 0)
	huge := session()
	huge.Table = strings.Repeat("t", vend.MaxTokenLen)
	for _, tt := range []struct {
		name string
		s    vend.Session
	}{
		{"no grants", vend.Session{Principal: "ann"}},
		{"bad grant", vend.Session{Grants: []vend.Grant{{Bucket: "b", Prefix: "p", Access: vend.Read}}}},
		{"one bad grant of two", vend.Session{Grants: []vend.Grant{{Bucket: "b", Prefix: "p/", Access: vend.Read}, {Bucket: "b", Prefix: "../", Access: vend.Read}}}},
		{"token too large", huge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, s, err := e.Mint(t.Context(), tt.s, 0)
			if floe.KindOf(err) != floe.Invalid || c != (vend.Credentials{}) || s.Grants != nil {
				t.Fatalf("Mint = %+v, %+v, %v; want an Invalid error", c, s, err)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	clock := fakeclock.New(t0)
	e := newEmbedded(t, &memKeys{}, clock, 0)
	c, _ := mint(t, e, session(), 0)
	other, _ := mint(t, e, session(), 0)

	// Another deployment: its own store, one with the same key id (same
	// clock) and one with another.
	foreignSame := newEmbedded(t, &memKeys{}, clock, 0)
	fc, _ := mint(t, foreignSame, session(), 0)
	if keyIDOf(t, fc.SessionToken) != keyIDOf(t, c.SessionToken) {
		t.Fatalf("foreign key id %q differs from %q; the test wants them equal", keyIDOf(t, fc.SessionToken), keyIDOf(t, c.SessionToken))
	}
	foreignOther := newEmbedded(t, &memKeys{}, clock, 24*time.Hour)
	fo, _ := mint(t, foreignOther, session(), 0)
	if keyIDOf(t, fo.SessionToken) == keyIDOf(t, c.SessionToken) {
		t.Fatal("foreign key ids are equal; the test wants them different")
	}

	for _, tt := range []struct {
		name      string
		akid, tok string
		want      error
	}{
		{"no token", c.AccessKeyID, "", vend.ErrUnknownAccessKey},
		{"AWS access key", "AKIAIOSFODNN7EXAMPLE", c.SessionToken, vend.ErrUnknownAccessKey},
		{"empty access key", "", c.SessionToken, vend.ErrUnknownAccessKey},
		{"lower-case access key", strings.ToLower(c.AccessKeyID), c.SessionToken, vend.ErrUnknownAccessKey},
		{"long access key", c.AccessKeyID + "A", c.SessionToken, vend.ErrUnknownAccessKey},
		{"another credential's access key", other.AccessKeyID, c.SessionToken, vend.ErrInvalidToken},
		{"another credential's token", c.AccessKeyID, other.SessionToken, vend.ErrInvalidToken},
		{"not a Floe token", c.AccessKeyID, "FwoGZXIvYXdzEJr//////////wEaDM", vend.ErrInvalidToken},
		{"other version", c.AccessKeyID, "FV2." + strings.TrimPrefix(c.SessionToken, "FV1."), vend.ErrInvalidToken},
		{"prefix only", c.AccessKeyID, "FV1.", vend.ErrInvalidToken},
		{"padded", c.AccessKeyID, c.SessionToken + "==", vend.ErrInvalidToken},
		{"standard base64", c.AccessKeyID, strings.NewReplacer("-", "+", "_", "/").Replace(c.SessionToken) + "+", vend.ErrInvalidToken},
		{"too long", c.AccessKeyID, c.SessionToken + strings.Repeat("A", vend.MaxTokenLen), vend.ErrInvalidToken},
		{"foreign, same key id", fc.AccessKeyID, fc.SessionToken, vend.ErrInvalidToken},
		{"foreign, other key id", fo.AccessKeyID, fo.SessionToken, vend.ErrInvalidToken},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantResolveErr(t, e, tt.akid, tt.tok, tt.want)
		})
	}
	if _, _, err := e.Resolve(t.Context(), c.AccessKeyID, "x"); floe.PublicMessage(err) != vend.ErrInvalidToken.Msg {
		t.Errorf("public message of %v = %q, want the sentinel's", err, floe.PublicMessage(err))
	}
	// Foreign tokens made e reload its keys; its own still work.
	resolve(t, e, c)
}

func TestExpiry(t *testing.T) {
	clock := fakeclock.New(t0)
	e := newEmbedded(t, &memKeys{}, clock, 0)
	c, s := mint(t, e, session(), 20*time.Minute)
	clock.Advance(20*time.Minute - time.Second)
	if got := resolve(t, e, c); !reflect.DeepEqual(got, s) {
		t.Errorf("Resolve = %+v, want %+v", got, s)
	}
	clock.Advance(time.Second)
	wantResolveErr(t, e, c.AccessKeyID, c.SessionToken, vend.ErrExpired)
	_, _, err := e.Resolve(t.Context(), c.AccessKeyID, c.SessionToken)
	if floe.PublicMessage(err) != vend.ErrExpired.Msg {
		t.Errorf("public message of %v = %q", err, floe.PublicMessage(err))
	}
}

// tokenVariants returns tampered copies of token: each character replaced by
// other base64url characters and by characters outside the alphabet,
// deleted and doubled; every bit 0 and 7 of the decoded bytes flipped;
// every truncation; an extra character.
func tokenVariants(t *testing.T, token string) []string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var out []string
	for i := range len(token) {
		idx := max(strings.IndexByte(alphabet, token[i]), 0)
		for _, r := range []byte{alphabet[(idx+1)%64], alphabet[(idx+32)%64], alphabet[idx^1], '!', '=', '.', '+'} {
			if r != token[i] {
				out = append(out, token[:i]+string(r)+token[i+1:])
			}
		}
		out = append(out, token[:i]+token[i+1:], token[:i+1]+token[i:])
		if i > 0 {
			out = append(out, token[:i])
		}
	}
	out = append(out, token+"A", token+"AA", token+"AAAA")
	raw := decodeToken(t, token)
	for i := range raw {
		for _, bit := range []byte{1, 0x80} {
			b := slices.Clone(raw)
			b[i] ^= bit
			out = append(out, encodeToken(b))
		}
	}
	return out
}

func TestTamperedTokens(t *testing.T) {
	clock := fakeclock.New(t0)
	ks := &memKeys{}
	e := newEmbedded(t, ks, clock, 0)
	c, _ := mint(t, e, session(), 0)
	loads := ks.loads.Load()
	variants := tokenVariants(t, c.SessionToken)
	for _, v := range variants {
		if v == c.SessionToken {
			t.Fatalf("variant equals the token")
		}
		wantResolveErr(t, e, c.AccessKeyID, v, vend.ErrInvalidToken)
	}
	// Unknown key ids reloaded the keys, but at most once a second.
	if n := ks.loads.Load() - loads; n != 1 {
		t.Errorf("%d tampered tokens made %d key loads, want 1", len(variants), n)
	}
	resolve(t, e, c)
	t.Logf("%d tampered tokens rejected", len(variants))
}

func TestUnknownKeyReload(t *testing.T) {
	clock := fakeclock.New(t0)
	ks := &memKeys{}
	a := newEmbedded(t, ks, clock, 0)
	b := newEmbedded(t, ks, clock, 0)
	if got := ks.ids(t); len(got) != 1 {
		t.Fatalf("two nodes starting on one store made keys %q, want one", got)
	}
	c, _ := mint(t, a, session(), 0)
	resolve(t, b, c)

	// a rotates; b learns the new key when it first sees it.
	clock.Advance(vend.DefaultKeyRotation + time.Minute)
	c2, s2 := mint(t, a, session(), 0)
	if keyIDOf(t, c2.SessionToken) == keyIDOf(t, c.SessionToken) {
		t.Fatal("a did not rotate")
	}
	loads := ks.loads.Load()
	if got := resolve(t, b, c2); !reflect.DeepEqual(got, s2) {
		t.Errorf("b resolved %+v, want %+v", got, s2)
	}
	if n := ks.loads.Load() - loads; n != 1 {
		t.Errorf("b loaded the keys %d times, want 1", n)
	}
	// b now mints with the new key too, without rotating again.
	c3, _ := mint(t, b, session(), 0)
	if keyIDOf(t, c3.SessionToken) != keyIDOf(t, c2.SessionToken) {
		t.Errorf("b minted under %q, want the new key %q", keyIDOf(t, c3.SessionToken), keyIDOf(t, c2.SessionToken))
	}
	resolve(t, a, c3)
	if got := ks.ids(t); len(got) != 2 {
		t.Errorf("store has keys %q, want two", got)
	}

	// Reloads for unknown keys happen at most once a second: a key that
	// appears in the store right after a reload is found a second later.
	dks := &memKeys{}
	must(t, dks.AddVendKey(t.Context(), vend.Key{ID: "kD", Secret: make([]byte, vend.KeySize), Created: clock.Now()}))
	d := newEmbedded(t, dks, clock, 0)
	dc, ds := mint(t, d, session(), 0)
	if keyIDOf(t, dc.SessionToken) != "kD" {
		t.Fatalf("d minted under %q, want kD", keyIDOf(t, dc.SessionToken))
	}
	wantResolveErr(t, b, dc.AccessKeyID, dc.SessionToken, vend.ErrInvalidToken) // reloads: not there yet
	must(t, ks.AddVendKey(t.Context(), vend.Key{ID: "kD", Secret: make([]byte, vend.KeySize), Created: clock.Now().Add(-time.Hour)}))
	loads = ks.loads.Load()
	clock.Advance(999 * time.Millisecond)
	wantResolveErr(t, b, dc.AccessKeyID, dc.SessionToken, vend.ErrInvalidToken) // throttled
	if n := ks.loads.Load() - loads; n != 0 {
		t.Errorf("b reloaded %d times within a second", n)
	}
	clock.Advance(time.Millisecond)
	if got := resolve(t, b, dc); !reflect.DeepEqual(got, ds) {
		t.Errorf("b resolved %+v, want %+v", got, ds)
	}
	// The old key, added as older, did not become b's sealing key.
	c4, _ := mint(t, b, session(), 0)
	if keyIDOf(t, c4.SessionToken) != keyIDOf(t, c2.SessionToken) {
		t.Errorf("b minted under %q, want %q", keyIDOf(t, c4.SessionToken), keyIDOf(t, c2.SessionToken))
	}
}

func TestKeyRotation(t *testing.T) {
	// Rotating every 4 hours, a key is deleted once it is older than
	// rotation + MaxTTL (+ 5 minutes of leeway): 16h05m.
	const rotation = 4 * time.Hour
	const retention = rotation + vend.MaxTTL + 5*time.Minute
	clock := fakeclock.New(t0)
	ks := &memKeys{}
	e := newEmbedded(t, ks, clock, rotation)
	ids := ks.ids(t)
	if len(ids) != 1 {
		t.Fatalf("keys %q, want one", ids)
	}
	created := map[string]time.Time{ids[0]: clock.Now()}
	var creds []vend.Credentials
	for step := range 10 {
		clock.Advance(rotation - time.Minute)
		old, _ := mint(t, e, session(), vend.MaxTTL) // the last credential under the current key
		creds = append(creds, old)
		clock.Advance(time.Minute)
		c, _ := mint(t, e, session(), 0) // the current key is due: rotate
		creds = append(creds, c)
		k := keyIDOf(t, c.SessionToken)
		if _, ok := created[k]; ok {
			t.Fatalf("step %d: minted under %q, not a new key", step, k)
		}
		created[k] = clock.Now()
		var want []string
		for id, at := range created {
			if !at.Before(clock.Now().Add(-retention)) {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		got := ks.ids(t)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d at %v: keys %q, want %q", step, clock.Now(), got, want)
		}
		// Every credential still valid resolves: no key was deleted early.
		for _, c := range creds {
			if clock.Now().Before(c.Expires) {
				resolve(t, e, c)
			} else {
				_, _, err := e.Resolve(t.Context(), c.AccessKeyID, c.SessionToken)
				if !errors.Is(err, vend.ErrExpired) && !errors.Is(err, vend.ErrInvalidToken) {
					t.Fatalf("an expired credential: %v", err)
				}
			}
		}
	}
	if n := len(ks.ids(t)); n != 5 {
		t.Errorf("%d keys kept, want 5 (16h05m of 4-hour keys)", n)
	}
}

func TestKeyRotationFailure(t *testing.T) {
	const rotation = 24 * time.Hour
	clock := fakeclock.New(t0)
	ks := &memKeys{}
	e := newEmbedded(t, ks, clock, rotation)
	created := clock.Now()
	ks.setFailAdd(errors.New("store down"))

	// Rotation fails: mint with the old key, and retry at most once a second.
	clock.Advance(rotation + vend.MaxTTL - 30*time.Minute)
	adds := ks.adds.Load()
	c, s := mint(t, e, session(), 0)
	if want := created.Add(rotation + vend.MaxTTL); !c.Expires.Equal(want) || !s.Expires.Equal(want) {
		t.Errorf("Expires = %v, want capped at the key's life %v", c.Expires, want)
	}
	resolve(t, e, c)
	mint(t, e, session(), 0)
	if n := ks.adds.Load() - adds; n != 1 {
		t.Errorf("%d rotation attempts within a second, want 1", n)
	}
	clock.Advance(time.Second)
	mint(t, e, session(), 0)
	if n := ks.adds.Load() - adds; n != 2 {
		t.Errorf("%d rotation attempts, want 2", n)
	}

	// Past the key's life nothing can be minted.
	clock.Advance(time.Hour)
	_, _, err := e.Mint(t.Context(), session(), 0)
	if floe.KindOf(err) != floe.Unavailable {
		t.Fatalf("Mint with an expired key and a failing store: %v, want Unavailable", err)
	}
	// The store recovers.
	ks.setFailAdd(nil)
	clock.Advance(time.Second)
	c, _ = mint(t, e, session(), 0)
	if want := clock.Now().Add(time.Hour).Truncate(time.Second); !c.Expires.Equal(want) {
		t.Errorf("Expires = %v after recovery, want %v", c.Expires, want)
	}
	// The old key's life is over: the rotation deleted it.
	if ids := ks.ids(t); len(ids) != 1 || ids[0] != keyIDOf(t, c.SessionToken) {
		t.Errorf("keys %q, want only the new one", ids)
	}
}

func TestNewEmbeddedErrors(t *testing.T) {
	clock := fakeclock.New(t0)
	if _, err := vend.NewEmbedded(t.Context(), nil, vend.EmbeddedOptions{}); err == nil {
		t.Error("NewEmbedded(nil store) succeeded")
	}
	if _, err := vend.NewEmbedded(t.Context(), &memKeys{}, vend.EmbeddedOptions{KeyRotation: -time.Hour}); err == nil {
		t.Error("NewEmbedded with a negative rotation succeeded")
	}
	down := errors.New("store down")
	ks := &memKeys{failLoad: down}
	if _, err := vend.NewEmbedded(t.Context(), ks, vend.EmbeddedOptions{Now: clock.Now}); !errors.Is(err, down) {
		t.Errorf("NewEmbedded on a failing store: %v, want %v", err, down)
	}
	ks = &memKeys{failAdd: down}
	if _, err := vend.NewEmbedded(t.Context(), ks, vend.EmbeddedOptions{Now: clock.Now}); !errors.Is(err, down) {
		t.Errorf("NewEmbedded on a store that cannot add: %v, want %v", err, down)
	}

	// A stale key and a store that cannot add: start, minting with it.
	ks = &memKeys{}
	must(t, ks.AddVendKey(t.Context(), vend.Key{ID: "old", Secret: make([]byte, vend.KeySize), Created: clock.Now().Add(-vend.DefaultKeyRotation - time.Hour)}))
	ks.setFailAdd(down)
	e := newEmbedded(t, ks, clock, 0)
	c, _ := mint(t, e, session(), 0)
	if keyIDOf(t, c.SessionToken) != "old" {
		t.Errorf("minted under %q, want old", keyIDOf(t, c.SessionToken))
	}

	// Unusable stored keys are skipped.
	ks = &memKeys{keys: []vend.Key{{ID: "short", Secret: []byte("x"), Created: clock.Now()}}}
	e = newEmbedded(t, ks, clock, 0)
	c, _ = mint(t, e, session(), 0)
	if keyIDOf(t, c.SessionToken) == "short" || len(ks.ids(t)) != 2 {
		t.Errorf("minted under %q, keys %q", keyIDOf(t, c.SessionToken), ks.ids(t))
	}

	// Losing the keys' store later: own keys keep resolving, unknown ones fail.
	ks.setFailLoad(down)
	resolve(t, e, c)
	wantResolveErr(t, e, c.AccessKeyID, encodeToken(append([]byte{2, 'z', 'z'}, make([]byte, 40)...)), vend.ErrInvalidToken)
}

// TestStartRace starts several nodes on an empty store at once: they agree
// on one key.
func TestStartRace(t *testing.T) {
	clock := fakeclock.New(t0)
	ks := &memKeys{}
	nodes := make([]*vend.Embedded, 8)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { nodes[i] = newEmbedded(t, ks, clock, 0) })
	}
	wg.Wait()
	if got := ks.ids(t); len(got) != 1 {
		t.Fatalf("keys %q, want one", got)
	}
	for i, a := range nodes {
		c, _ := mint(t, a, session(), 0)
		resolve(t, nodes[(i+1)%len(nodes)], c)
	}
}

// TestConcurrent mints and resolves on two nodes from many goroutines while
// the clock makes the keys rotate.
func TestConcurrent(t *testing.T) {
	const rotation = 30 * time.Minute
	clock := fakeclock.New(t0)
	ks := &memKeys{}
	nodes := []*vend.Embedded{newEmbedded(t, ks, clock, rotation), newEmbedded(t, ks, clock, rotation)}
	const workers, rounds, ticks = 8, 150, 6
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				a, b := nodes[(w+i)%2], nodes[(w+i+1)%2]
				s := session()
				s.Table = fmt.Sprintf("t%d.%d", w, i)
				c, minted, err := a.Mint(t.Context(), s, vend.MaxTTL)
				if err != nil {
					errs <- fmt.Errorf("Mint: %w", err)
					return
				}
				got, secret, err := b.Resolve(t.Context(), c.AccessKeyID, c.SessionToken)
				if err != nil || secret != c.SecretAccessKey || !reflect.DeepEqual(got, minted) {
					errs <- fmt.Errorf("Resolve = %+v, %v; want %+v", got, err, minted)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range ticks {
			time.Sleep(2 * time.Millisecond)
			clock.Advance(rotation + time.Minute)
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d keys after %d clock ticks", len(ks.ids(t)), ticks)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestLoadedKeysBounded: a node holds at most 32 sealing keys in memory,
// the newest. With 40 in the store, a credential sealed under the oldest
// (beyond the bound) does not resolve on a node that starts then, and one
// under the newest does.
func TestLoadedKeysBounded(t *testing.T) {
	clock := fakeclock.New(t0)
	ks := &memKeys{}
	old := newEmbedded(t, ks, clock, 0)
	oldCred, _ := mint(t, old, session(), 0)
	for i := range 39 {
		secret := make([]byte, vend.KeySize)
		secret[0] = byte(i + 1)
		if err := ks.AddVendKey(t.Context(), vend.Key{ID: fmt.Sprintf("k%02d", i), Secret: secret, Created: t0.Add(time.Duration(i+1) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ks.ids(t)); n != 40 {
		t.Fatalf("store holds %d keys, want 40", n)
	}
	clock.Advance(time.Minute)
	node := newEmbedded(t, ks, clock, 0)
	if _, _, err := node.Resolve(t.Context(), oldCred.AccessKeyID, oldCred.SessionToken); err == nil {
		t.Fatal("a credential under the 40th newest key resolved: more than 32 keys are held")
	}
	newCred, _ := mint(t, node, session(), 0)
	if _, _, err := node.Resolve(t.Context(), newCred.AccessKeyID, newCred.SessionToken); err != nil {
		t.Fatalf("a credential under the newest key: %v", err)
	}
}
