package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/authz"
)

func testDeleteSigningKey(t *testing.T, e *env) {
	pem := []byte("-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n")
	must(t, e.s.AddSigningKey(e.ctx, auth.SigningKey{KID: "a", PrivatePEM: pem}))
	must(t, e.s.AddSigningKey(e.ctx, auth.SigningKey{KID: "b", PrivatePEM: pem}))
	must(t, e.s.DeleteSigningKey(e.ctx, "a"))
	must(t, e.s.DeleteSigningKey(e.ctx, "a")) // absent: not an error
	keys, err := e.s.SigningKeys(e.ctx)
	must(t, err)
	if len(keys) != 1 || keys[0].KID != "b" {
		t.Fatalf("SigningKeys after delete = %+v, want only b", keys)
	}
}

func testClientKeys(t *testing.T, e *env) {
	must(t, e.s.CreatePrincipal(e.ctx, auth.Principal{ID: "p1", Name: "etl", ClientID: "c1", SecretHash: "h"}))
	must(t, e.s.CreatePrincipal(e.ctx, auth.Principal{ID: "p2", Name: "bi", ClientID: "c2", SecretHash: "h"}))
	keys, err := e.s.ClientKeys(e.ctx, "p1")
	must(t, err)
	if keys == nil || len(keys) != 0 {
		t.Fatalf("ClientKeys of a principal without keys = %#v, want empty", keys)
	}
	k1 := auth.ClientKey{PrincipalID: "p1", KID: "kid-1", Alg: "RS256", PublicPEM: "-----BEGIN PUBLIC KEY-----\nA\n-----END PUBLIC KEY-----\n",
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC)}
	k2 := auth.ClientKey{PrincipalID: "p1", KID: "kid-2", Alg: "ES256", PublicPEM: "pem2"}
	must(t, e.s.AddClientKey(e.ctx, k2)) // now: newer than k1
	must(t, e.s.AddClientKey(e.ctx, k1))
	must(t, e.s.AddClientKey(e.ctx, auth.ClientKey{PrincipalID: "p2", KID: "kid-1", Alg: "RS256", PublicPEM: "pem"})) // per principal

	tests := []struct {
		name   string
		k      auth.ClientKey
		kind   floe.Kind
		entity string
	}{
		{"duplicate", auth.ClientKey{PrincipalID: "p1", KID: "kid-1", Alg: "RS256", PublicPEM: "x"}, floe.AlreadyExists, "client key"},
		{"unknown principal", auth.ClientKey{PrincipalID: "ghost", KID: "k", Alg: "RS256", PublicPEM: "x"}, floe.NotFound, "principal"},
		{"no kid", auth.ClientKey{PrincipalID: "p1", Alg: "RS256", PublicPEM: "x"}, floe.Invalid, "client key"},
		{"no alg", auth.ClientKey{PrincipalID: "p1", KID: "k", PublicPEM: "x"}, floe.Invalid, "client key"},
		{"no key", auth.ClientKey{PrincipalID: "p1", KID: "k", Alg: "RS256"}, floe.Invalid, "client key"},
	}
	for _, tt := range tests {
		wantErr(t, e.s.AddClientKey(e.ctx, tt.k), tt.kind, tt.entity, "")
	}

	keys, err = e.s.ClientKeys(e.ctx, "p1")
	must(t, err)
	if len(keys) != 2 || keys[0].KID != "kid-1" || keys[1].KID != "kid-2" {
		t.Fatalf("ClientKeys = %+v, want kid-1, kid-2 (oldest first)", keys)
	}
	want := k1
	want.CreatedAt = k1.CreatedAt.Truncate(time.Microsecond)
	if keys[0] != want {
		t.Errorf("ClientKeys[0] = %+v, want %+v", keys[0], want)
	}
	if keys[1].Alg != "ES256" || keys[1].PublicPEM != "pem2" || !keys[1].CreatedAt.Equal(e.clock.Now().Truncate(time.Microsecond)) {
		t.Errorf("ClientKeys[1] = %+v", keys[1])
	}

	must(t, e.s.DeleteClientKey(e.ctx, "p1", "kid-1"))
	wantErr(t, e.s.DeleteClientKey(e.ctx, "p1", "kid-1"), floe.NotFound, "client key", "")
	keys, err = e.s.ClientKeys(e.ctx, "p1")
	must(t, err)
	if len(keys) != 1 || keys[0].KID != "kid-2" {
		t.Fatalf("ClientKeys after delete = %+v", keys)
	}
	if keys, _ := e.s.ClientKeys(e.ctx, "p2"); len(keys) != 1 {
		t.Errorf("p2's key was touched: %+v", keys)
	}
}

func testUseJTI(t *testing.T, e *env) {
	now := e.clock.Now()
	must(t, e.s.UseJTI(e.ctx, "c1\x1fj1", now.Add(time.Minute)))
	wantErr(t, e.s.UseJTI(e.ctx, "c1\x1fj1", now.Add(5*time.Minute)), floe.AlreadyExists, "jti", "")
	must(t, e.s.UseJTI(e.ctx, "c2\x1fj1", now.Add(time.Minute))) // keys are distinct
	wantErr(t, e.s.UseJTI(e.ctx, "", now), floe.Invalid, "jti", "")

	// Still refused just before its expiry, accepted again after it.
	e.clock.Advance(time.Minute - time.Second)
	wantErr(t, e.s.UseJTI(e.ctx, "c1\x1fj1", now.Add(10*time.Minute)), floe.AlreadyExists, "jti", "")
	e.clock.Advance(2 * time.Second)
	must(t, e.s.UseJTI(e.ctx, "c1\x1fj1", e.clock.Now().Add(time.Minute)))
	wantErr(t, e.s.UseJTI(e.ctx, "c1\x1fj1", e.clock.Now().Add(time.Minute)), floe.AlreadyExists, "jti", "")

	// Concurrent uses of one id: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.s.UseJTI(e.ctx, "race", e.clock.Now().Add(time.Minute)); err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if floe.KindOf(err) != floe.AlreadyExists {
				t.Errorf("UseJTI: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d concurrent uses of one jti succeeded, want 1", wins)
	}

	// The sweep (after maxSweepInterval) keeps live rows.
	e.clock.Advance(10 * time.Minute)
	must(t, e.s.UseJTI(e.ctx, "late", e.clock.Now().Add(time.Minute)))
	wantErr(t, e.s.UseJTI(e.ctx, "late", e.clock.Now().Add(time.Minute)), floe.AlreadyExists, "jti", "")
}

func testRevokedTokens(t *testing.T, e *env) {
	ok, err := e.s.TokenRevoked(e.ctx, "t1")
	must(t, err)
	if ok {
		t.Fatal("t1 revoked before RevokeToken")
	}
	now := e.clock.Now()
	must(t, e.s.RevokeToken(e.ctx, "t1", now.Add(15*time.Minute)))
	must(t, e.s.RevokeToken(e.ctx, "t1", now.Add(time.Minute))) // twice: fine, later expiry kept
	wantErr(t, e.s.RevokeToken(e.ctx, "", now), floe.Invalid, "token", "")
	for _, tt := range []struct {
		jti  string
		want bool
	}{{"t1", true}, {"T1", false}, {"t2", false}} {
		ok, err := e.s.TokenRevoked(e.ctx, tt.jti)
		must(t, err)
		if ok != tt.want {
			t.Errorf("TokenRevoked(%q) = %v, want %v", tt.jti, ok, tt.want)
		}
	}
	must(t, e.s.CreatePrincipal(e.ctx, auth.Principal{ID: "p1", Name: "etl", ClientID: "c1", SecretHash: "h", Scopes: []string{"catalog"}}))
	for _, tt := range []struct {
		jti  string
		want bool
	}{{"t1", true}, {"t2", false}} {
		ts, err := e.s.TokenState(e.ctx, "c1", tt.jti)
		must(t, err)
		p := ts.Principal
		if p.ID != "p1" || p.Name != "etl" || p.ClientID != "c1" || p.Admin || p.Disabled || ts.Revoked != tt.want {
			t.Errorf("TokenState(c1, %s) = %+v; want etl, revoked %v", tt.jti, ts, tt.want)
		}
	}
	must(t, e.s.SetPrincipalDisabled(e.ctx, "etl", true))
	if ts, err := e.s.TokenState(e.ctx, "c1", "t2"); err != nil || !ts.Principal.Disabled {
		t.Errorf("TokenState of a disabled principal = %+v, %v", ts, err)
	}
	must(t, e.s.SetPrincipalDisabled(e.ctx, "etl", false))
	// The policy version comes with the token's state, and follows changes.
	for range 2 {
		ts, err := e.s.TokenState(e.ctx, "c1", "t2")
		must(t, err)
		v, err := e.s.AuthzVersion(e.ctx)
		must(t, err)
		if !ts.HasPolicyVersion || ts.PolicyVersion != v {
			t.Errorf("TokenState policy version = %d (known %v), AuthzVersion = %d", ts.PolicyVersion, ts.HasPolicyVersion, v)
		}
		must(t, e.s.CreateRole(e.ctx, authz.RoleInfo{Name: fmt.Sprint("token-state-", v)}))
	}
	_, err = e.s.TokenState(e.ctx, "ghost", "t1")
	wantErr(t, err, floe.NotFound, "principal", "Principal does not exist for client id: ghost")

	// A sweep after t1's first expiry but before its second keeps it.
	e.clock.Advance(10 * time.Minute)
	must(t, e.s.RevokeToken(e.ctx, "t2", e.clock.Now().Add(time.Minute)))
	if ok, _ := e.s.TokenRevoked(e.ctx, "t1"); !ok {
		t.Error("t1 swept before its expiry")
	}
	// Expired rows are swept.
	e.clock.Advance(10 * time.Minute)
	must(t, e.s.RevokeToken(e.ctx, "t3", e.clock.Now().Add(time.Minute)))
	if ok, _ := e.s.TokenRevoked(e.ctx, "t1"); ok {
		t.Error("expired revocation t1 was not swept")
	}
}

func testAudit(t *testing.T, e *env) {
	seq, hash, err := e.s.AuditHead(e.ctx)
	must(t, err)
	if seq != 0 || hash != "" {
		t.Fatalf("AuditHead of an empty log = %d, %q", seq, hash)
	}
	rs, err := e.s.AuditRecords(e.ctx, 0, 10)
	must(t, err)
	if rs == nil || len(rs) != 0 {
		t.Fatalf("AuditRecords of an empty log = %#v", rs)
	}
	seal := func(i int) func(int64, string) (audit.Record, error) {
		return func(prevSeq int64, prevHash string) (audit.Record, error) {
			return audit.Record{Seq: prevSeq + 1, PrevHash: prevHash, Hash: fmt.Sprintf("h%d", prevSeq+1),
				Time: time.Date(2026, 1, 1, 0, 0, i, 123456789, time.FixedZone("X", 3600)), RequestID: "r", Principal: "ann",
				ClientAddr: "10.0.0.1", Action: "test", Resource: fmt.Sprint(i), Outcome: "success",
				Detail: []byte(`{"b":1, "a":"\u00e9"}`)}, nil
		}
	}
	r1, err := e.s.AppendAudit(e.ctx, seal(1))
	must(t, err)
	if r1.Seq != 1 || r1.PrevHash != "" || r1.Hash != "h1" {
		t.Fatalf("first record %+v", r1)
	}
	// A seal that does not follow the head is refused.
	_, err = e.s.AppendAudit(e.ctx, func(int64, string) (audit.Record, error) {
		return audit.Record{Seq: 7, Hash: "x", Detail: []byte("{}")}, nil
	})
	wantErr(t, err, floe.Internal, "audit", "")

	// Concurrent appends form one chain.
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.s.AppendAudit(e.ctx, seal(i+2)); err != nil {
				t.Errorf("AppendAudit: %v", err)
			}
		}()
	}
	wg.Wait()
	seq, hash, err = e.s.AuditHead(e.ctx)
	must(t, err)
	if seq != 11 || hash != "h11" {
		t.Fatalf("AuditHead = %d, %q, want 11, h11", seq, hash)
	}
	var all []audit.Record
	for after := int64(0); ; {
		page, err := e.s.AuditRecords(e.ctx, after, 4)
		must(t, err)
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
	var seqs []int64
	for i, r := range all {
		seqs = append(seqs, r.Seq)
		if i > 0 && r.PrevHash != all[i-1].Hash {
			t.Errorf("record %d links to %q, want %q", r.Seq, r.PrevHash, all[i-1].Hash)
		}
	}
	if !slices.Equal(seqs, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) {
		t.Fatalf("seqs = %v", seqs)
	}
	got := all[0]
	if !got.Time.Equal(time.Date(2025, 12, 31, 23, 0, 1, 123456000, time.UTC)) || got.Time.Location() != time.UTC ||
		string(got.Detail) != `{"b":1, "a":"\u00e9"}` || got.Principal != "ann" || got.ClientAddr != "10.0.0.1" ||
		got.Action != "test" || got.Resource != "1" || got.Outcome != "success" || got.RequestID != "r" {
		t.Errorf("record 1 = %+v (detail %s)", got, got.Detail)
	}
}
