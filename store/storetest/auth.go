package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
)

func principalEqual(a, b auth.Principal) bool {
	return a.ID == b.ID && a.Name == b.Name && a.ClientID == b.ClientID && a.SecretHash == b.SecretHash &&
		slices.Equal(a.Scopes, b.Scopes) && a.Admin == b.Admin && a.Disabled == b.Disabled && a.CreatedAt.Equal(b.CreatedAt) &&
		slices.Equal(a.AllowedCIDRs, b.AllowedCIDRs)
}

func testPrincipals(t *testing.T, e *env) {
	_, err := e.s.PrincipalByName(e.ctx, "ann")
	wantErr(t, err, floe.NotFound, "principal", "Principal does not exist: ann")
	_, err = e.s.PrincipalByClientID(e.ctx, "c-ann")
	wantErr(t, err, floe.NotFound, "principal", "")
	wantErr(t, e.s.SetPrincipalDisabled(e.ctx, "ann", true), floe.NotFound, "principal", "Principal does not exist: ann")
	list, err := e.s.ListPrincipals(e.ctx)
	must(t, err)
	if list == nil || len(list) != 0 {
		t.Errorf("ListPrincipals on an empty store = %#v", list)
	}

	ann := auth.Principal{ID: "id-ann", Name: "ann", ClientID: "c-ann", SecretHash: "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA",
		Scopes: []string{"catalog", "admin:read"}, Admin: true,
		CreatedAt: time.Date(2025, 5, 6, 7, 8, 9, 123456789, time.FixedZone("CEST", 2*3600))}
	bob := auth.Principal{ID: "id-bob", Name: "bob", ClientID: "c-bob", SecretHash: "h"}
	must(t, e.s.CreatePrincipal(e.ctx, bob))
	must(t, e.s.CreatePrincipal(e.ctx, ann))
	must(t, e.s.CreatePrincipal(e.ctx, auth.Principal{ID: "id-Zed", Name: "Zed", ClientID: "c-zed", Disabled: true}))

	tests := []struct {
		name string
		p    auth.Principal
		kind floe.Kind
		msg  string
	}{
		{"name taken", auth.Principal{ID: "x", Name: "ann", ClientID: "c-x"}, floe.AlreadyExists, "Principal already exists: ann"},
		{"client id taken", auth.Principal{ID: "x", Name: "x", ClientID: "c-ann"}, floe.AlreadyExists, "Client id is already in use: c-ann"},
		{"id taken", auth.Principal{ID: "id-ann", Name: "x", ClientID: "c-x"}, floe.AlreadyExists, "Principal id is already in use: id-ann"},
		{"no id", auth.Principal{Name: "x", ClientID: "c-x"}, floe.Invalid, ""},
		{"no name", auth.Principal{ID: "x", ClientID: "c-x"}, floe.Invalid, ""},
		{"no client id", auth.Principal{ID: "x", Name: "x"}, floe.Invalid, ""},
	}
	for _, tt := range tests {
		wantErr(t, e.s.CreatePrincipal(e.ctx, tt.p), tt.kind, "principal", tt.msg)
	}

	want := ann
	want.CreatedAt = ann.CreatedAt.UTC().Truncate(time.Microsecond)
	got, err := e.s.PrincipalByName(e.ctx, "ann")
	must(t, err)
	if !principalEqual(got, want) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("PrincipalByName = %+v, want %+v", got, want)
	}
	got, err = e.s.PrincipalByClientID(e.ctx, "c-ann")
	must(t, err)
	if !principalEqual(got, want) {
		t.Errorf("PrincipalByClientID = %+v, want %+v", got, want)
	}
	got, err = e.s.PrincipalByName(e.ctx, "bob")
	must(t, err)
	if len(got.Scopes) != 0 || got.Admin || got.Disabled || !got.CreatedAt.Equal(e.clock.Now().Truncate(time.Microsecond)) {
		t.Errorf("bob = %+v (a zero CreatedAt becomes now)", got)
	}
	_, err = e.s.PrincipalByName(e.ctx, "c-ann")
	wantErr(t, err, floe.NotFound, "principal", "Principal does not exist: c-ann")
	_, err = e.s.PrincipalByName(e.ctx, "ANN")
	wantErr(t, err, floe.NotFound, "principal", "")

	list, err = e.s.ListPrincipals(e.ctx)
	must(t, err)
	var names []string
	for _, p := range list {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"Zed", "ann", "bob"}) {
		t.Errorf("ListPrincipals names = %q, want [Zed ann bob]", names)
	}

	// ann is the only enabled administrator (bob is none, Zed is disabled):
	// the store keeps it enabled until another administrator is.
	wantErr(t, e.s.SetPrincipalDisabled(e.ctx, "ann", true), floe.Conflict, "principal",
		"cannot disable ann: it is the only enabled administrator; create or enable another administrator first")
	if p, _ := e.s.PrincipalByName(e.ctx, "ann"); p.Disabled {
		t.Error("the only enabled admin was disabled")
	}
	must(t, e.s.SetPrincipalDisabled(e.ctx, "bob", true)) // not an administrator
	must(t, e.s.SetPrincipalDisabled(e.ctx, "bob", false))
	must(t, e.s.CreatePrincipal(e.ctx, auth.Principal{ID: "id-cy", Name: "cy", ClientID: "c-cy", SecretHash: "h", Admin: true}))
	must(t, e.s.SetPrincipalDisabled(e.ctx, "ann", true))
	wantErr(t, e.s.SetPrincipalDisabled(e.ctx, "cy", true), floe.Conflict, "principal",
		"cannot disable cy: it is the only enabled administrator; create or enable another administrator first")
	if p, _ := e.s.PrincipalByName(e.ctx, "ann"); !p.Disabled {
		t.Error("ann not disabled")
	}
	must(t, e.s.SetPrincipalDisabled(e.ctx, "ann", true)) // no change is not an error
	must(t, e.s.SetPrincipalDisabled(e.ctx, "ann", false))
	if p, _ := e.s.PrincipalByClientID(e.ctx, "c-ann"); p.Disabled {
		t.Error("ann still disabled")
	}
	if p, _ := e.s.PrincipalByName(e.ctx, "Zed"); !p.Disabled {
		t.Error("Zed was created disabled")
	}
}

func testSigningKeys(t *testing.T, e *env) {
	keys, err := e.s.SigningKeys(e.ctx)
	must(t, err)
	if keys == nil || len(keys) != 0 {
		t.Errorf("SigningKeys on an empty store = %#v", keys)
	}
	pem := func(i int) []byte {
		return fmt.Appendf(nil, "-----BEGIN PRIVATE KEY-----\nkey%d\x00\xff\n-----END PRIVATE KEY-----\n", i)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	must(t, e.s.AddSigningKey(e.ctx, auth.SigningKey{KID: "k2", PrivatePEM: pem(2), CreatedAt: base.Add(2 * time.Hour)}))
	must(t, e.s.AddSigningKey(e.ctx, auth.SigningKey{KID: "k1", PrivatePEM: pem(1), CreatedAt: base.Add(time.Hour)}))
	must(t, e.s.AddSigningKey(e.ctx, auth.SigningKey{KID: "k3", PrivatePEM: pem(3), CreatedAt: base.Add(3 * time.Hour)}))
	must(t, e.s.AddSigningKey(e.ctx, auth.SigningKey{KID: "k0", PrivatePEM: pem(0)})) // now: newest

	wantErr(t, e.s.AddSigningKey(e.ctx, auth.SigningKey{KID: "k1", PrivatePEM: pem(9)}),
		floe.AlreadyExists, "signing key", "Signing key already exists: k1")
	wantErr(t, e.s.AddSigningKey(e.ctx, auth.SigningKey{PrivatePEM: pem(9)}), floe.Invalid, "signing key", "")
	wantErr(t, e.s.AddSigningKey(e.ctx, auth.SigningKey{KID: "k9"}), floe.Invalid, "signing key", "")

	keys, err = e.s.SigningKeys(e.ctx)
	must(t, err)
	var kids []string
	for _, k := range keys {
		kids = append(kids, k.KID)
		i := int(k.KID[1] - '0')
		if !bytes.Equal(k.PrivatePEM, pem(i)) {
			t.Errorf("%s: PEM %q, want %q", k.KID, k.PrivatePEM, pem(i))
		}
	}
	if !slices.Equal(kids, []string{"k0", "k3", "k2", "k1"}) {
		t.Errorf("SigningKeys order = %q, want newest first [k0 k3 k2 k1]", kids)
	}
	if !keys[1].CreatedAt.Equal(base.Add(3*time.Hour)) || keys[1].CreatedAt.Location() != time.UTC {
		t.Errorf("k3 CreatedAt = %v", keys[1].CreatedAt)
	}
}

func testPrincipalPasswords(t *testing.T, e *env) {
	wantErr(t, e.s.SetPrincipalPassword(e.ctx, "ann", "SCRAM-SHA-256$x"), floe.NotFound, "principal", "Principal does not exist: ann")
	ann := auth.Principal{ID: "id-ann", Name: "ann", ClientID: "c-ann", SecretHash: "h", Scopes: []string{"catalog"}}
	must(t, e.s.CreatePrincipal(e.ctx, ann))
	_, _, err := e.s.PrincipalPassword(e.ctx, "ann")
	wantErr(t, err, floe.NotFound, "password", "Principal ann has no SQL password")
	_, _, err = e.s.PrincipalPassword(e.ctx, "nobody")
	wantErr(t, err, floe.NotFound, "password", "")

	for _, v := range []string{"SCRAM-SHA-256$4096:c2FsdA==$a:b", "SCRAM-SHA-256$4096:c2FsdDI=$c:d"} {
		must(t, e.s.SetPrincipalPassword(e.ctx, "ann", v))
		p, got, err := e.s.PrincipalPassword(e.ctx, "ann")
		must(t, err)
		if got != v || p.ID != "id-ann" || p.Name != "ann" || p.ClientID != "c-ann" || len(p.Scopes) != 1 {
			t.Errorf("PrincipalPassword = %+v, %q; want ann with %q", p, got, v)
		}
	}
	must(t, e.s.SetPrincipalPassword(e.ctx, "ann", ""))
	_, _, err = e.s.PrincipalPassword(e.ctx, "ann")
	wantErr(t, err, floe.NotFound, "password", "")
	must(t, e.s.SetPrincipalPassword(e.ctx, "ann", "")) // removing twice is fine
}

// testPrincipalSecretRotation: a rotation keeps at most the hash it
// replaced, with its expiry; revoking the tokens sets a not-before that
// never moves back, visible in TokenState, and records a revocation.
func testPrincipalSecretRotation(t *testing.T, e *env) {
	now := e.clock.Now().UTC().Truncate(time.Microsecond)
	must(t, e.s.CreatePrincipal(e.ctx, auth.Principal{ID: "id-rot", Name: "rot", ClientID: "c-rot", SecretHash: "h1"}))
	wantErr(t, e.s.RotatePrincipalSecret(e.ctx, "ghost", "h", time.Time{}), floe.NotFound, "principal", "Principal does not exist: ghost")
	wantErr(t, e.s.RevokePrincipalTokens(e.ctx, "ghost", now), floe.NotFound, "principal", "Principal does not exist: ghost")

	tests := []struct {
		name      string
		hash      string
		until     time.Time
		wantOld   string
		wantUntil time.Time
	}{
		{"with grace", "h2", now.Add(time.Hour), "h1", now.Add(time.Hour)},
		{"again with grace: only the last old hash", "h3", now.Add(2 * time.Hour), "h2", now.Add(2 * time.Hour)},
		{"no grace: no old hash", "h4", time.Time{}, "", time.Time{}},
		{"grace already over", "h5", now.Add(-time.Second), "", time.Time{}},
	}
	for _, tt := range tests {
		must(t, e.s.RotatePrincipalSecret(e.ctx, "rot", tt.hash, tt.until))
		for _, get := range []func() (auth.Principal, error){
			func() (auth.Principal, error) { return e.s.PrincipalByName(e.ctx, "rot") },
			func() (auth.Principal, error) { return e.s.PrincipalByClientID(e.ctx, "c-rot") },
		} {
			p, err := get()
			must(t, err)
			if p.SecretHash != tt.hash || p.OldSecretHash != tt.wantOld || !p.OldSecretExpiresAt.Equal(tt.wantUntil) {
				t.Errorf("%s: hash %q old %q until %v, want %q %q %v", tt.name, p.SecretHash, p.OldSecretHash,
					p.OldSecretExpiresAt, tt.hash, tt.wantOld, tt.wantUntil)
			}
		}
	}

	v0, err := e.s.RevocationVersion(e.ctx)
	must(t, err)
	ts, err := e.s.TokenState(e.ctx, "c-rot", "jti")
	must(t, err)
	if !ts.Principal.TokensNotBefore.IsZero() {
		t.Errorf("TokensNotBefore before any revocation = %v", ts.Principal.TokensNotBefore)
	}
	nb := now.Add(time.Second).Truncate(time.Second)
	must(t, e.s.RevokePrincipalTokens(e.ctx, "rot", nb))
	must(t, e.s.RevokePrincipalTokens(e.ctx, "rot", nb.Add(-time.Hour))) // never moves back
	ts, err = e.s.TokenState(e.ctx, "c-rot", "jti")
	must(t, err)
	p, err := e.s.PrincipalByName(e.ctx, "rot")
	must(t, err)
	if !ts.Principal.TokensNotBefore.Equal(nb) || !p.TokensNotBefore.Equal(nb) {
		t.Errorf("TokensNotBefore = %v (token state), %v (principal), want %v", ts.Principal.TokensNotBefore, p.TokensNotBefore, nb)
	}
	revs, err := e.s.Revocations(e.ctx, v0)
	must(t, err)
	found := false
	for _, r := range revs {
		found = found || (r.Kind == "tokens" && r.Subject == "rot")
	}
	if !found {
		t.Errorf("revocations after RevokePrincipalTokens = %+v, want a tokens entry for rot", revs)
	}
}
