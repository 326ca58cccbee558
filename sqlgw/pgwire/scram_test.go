package pgwire

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

// TestSCRAMRFC7677 replays the SCRAM-SHA-256 example exchange of RFC 7677
// section 3 against the server side.
func TestSCRAMRFC7677(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	v, err := deriveScramVerifier("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	ss := &scramServer{v: v, nonce: func() (string, error) { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", nil }}
	first, err := ss.first(mechSCRAM, []byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(first) != want {
		t.Fatalf("server-first = %s, want %s", first, want)
	}
	final, err := ss.final([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(final) != want {
		t.Fatalf("server-final = %s, want %s", final, want)
	}
}

// scramClientFinal computes a client-final-message for a password.
func scramClientFinal(t *testing.T, password, clientFirstBare, serverFirst, cbind, nonce string) string {
	t.Helper()
	attrs := map[string]string{}
	for _, a := range strings.Split(serverFirst, ",") {
		attrs[a[:1]] = a[2:]
	}
	salt, _ := base64.StdEncoding.DecodeString(attrs["s"])
	salted, err := pbkdf2.Key(sha256.New, password, salt, 4096, 32)
	if err != nil {
		t.Fatal(err)
	}
	clientKey := hmacSHA256(salted, []byte("Client Key"))
	stored := sha256.Sum256(clientKey)
	withoutProof := "c=" + base64.StdEncoding.EncodeToString([]byte(cbind)) + ",r=" + nonce
	sig := hmacSHA256(stored[:], []byte(clientFirstBare+","+serverFirst+","+withoutProof))
	for i := range clientKey {
		clientKey[i] ^= sig[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(clientKey)
}

// TestSCRAMExchanges covers channel binding, downgrades and malformed
// messages; only the exchanges marked ok may succeed.
func TestSCRAMExchanges(t *testing.T) {
	v, err := deriveScramVerifier("pw", []byte("0123456789abcdef"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	cb := []byte("certificate-hash-32-bytes-long!!")
	const bare = "n=,r=clientnonce"
	cases := []struct {
		name      string
		cbData    []byte
		mech      string
		first     string
		password  string
		cbind     string // gs2 header + binding data in the final message
		nonceFrom string // "" = the server's full nonce
		firstErr  bool
		ok        bool
	}{
		{name: "plain", mech: mechSCRAM, first: "n,," + bare, password: "pw", cbind: "n,,", ok: true},
		{name: "client could bind, server cannot", mech: mechSCRAM, first: "y,," + bare, password: "pw", cbind: "y,,", ok: true},
		{name: "plus", cbData: cb, mech: mechSCRAMPlus, first: "p=tls-server-end-point,," + bare, password: "pw",
			cbind: "p=tls-server-end-point,," + string(cb), ok: true},
		{name: "no binding although offered", cbData: cb, mech: mechSCRAM, first: "n,," + bare, password: "pw", cbind: "n,,", ok: true},
		{name: "plus with wrong binding data", cbData: cb, mech: mechSCRAMPlus, first: "p=tls-server-end-point,," + bare, password: "pw",
			cbind: "p=tls-server-end-point,,other-certificate"},
		{name: "downgrade: y although plus offered", cbData: cb, mech: mechSCRAM, first: "y,," + bare, firstErr: true},
		{name: "plus not offered", mech: mechSCRAMPlus, first: "p=tls-server-end-point,," + bare, firstErr: true},
		{name: "plus mechanism with n flag", cbData: cb, mech: mechSCRAMPlus, first: "n,," + bare, firstErr: true},
		{name: "other binding type", cbData: cb, mech: mechSCRAMPlus, first: "p=tls-unique,," + bare, firstErr: true},
		{name: "unknown mechanism", mech: "SCRAM-SHA-1", first: "n,," + bare, firstErr: true},
		{name: "authzid", mech: mechSCRAM, first: "n,a=admin," + bare, firstErr: true},
		{name: "no nonce", mech: mechSCRAM, first: "n,,n=", firstErr: true},
		{name: "empty", mech: mechSCRAM, first: "", firstErr: true},
		{name: "wrong password", mech: mechSCRAM, first: "n,," + bare, password: "nope", cbind: "n,,"},
		{name: "gs2 header changed", mech: mechSCRAM, first: "n,," + bare, password: "pw", cbind: "y,,"},
		{name: "nonce changed", mech: mechSCRAM, first: "n,," + bare, password: "pw", cbind: "n,,", nonceFrom: "clientnonceXYZ"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ss := &scramServer{v: v, cbData: tc.cbData}
			sf, err := ss.first(tc.mech, []byte(tc.first))
			if (err != nil) != tc.firstErr {
				t.Fatalf("first: err = %v, want error %v", err, tc.firstErr)
			}
			if err != nil {
				return
			}
			nonce := ss.fullNonce
			if tc.nonceFrom != "" {
				nonce = tc.nonceFrom
			}
			final := scramClientFinal(t, tc.password, bare, string(sf), tc.cbind, nonce)
			_, err = ss.final([]byte(final))
			if (err == nil) != tc.ok {
				t.Errorf("final: err = %v, want success %v", err, tc.ok)
			}
		})
	}
	ss := &scramServer{v: v}
	if _, err := ss.first(mechSCRAM, []byte("n,,"+bare)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "c=biws", "c=biws,r=x,p=!!", "r=x,c=biws,p=AAAA", "c=###,r=x,p=AAAA"} {
		if _, err := ss.final([]byte(bad)); err == nil {
			t.Errorf("final(%q) succeeded", bad)
		}
	}
}

// TestScramVerifierFormat round-trips the pg_authid format and checks
// passwords, including SASLprep normalization.
func TestScramVerifierFormat(t *testing.T) {
	v, err := NewScramVerifier("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if v.Iterations != DefaultScramIterations || len(v.Salt) != 16 {
		t.Errorf("verifier = %+v", v)
	}
	s := v.String()
	if !strings.HasPrefix(s, "SCRAM-SHA-256$4096:") {
		t.Errorf("String() = %s", s)
	}
	w, err := ParseScramVerifier(s)
	if err != nil {
		t.Fatal(err)
	}
	if w.String() != s || !w.Check("s3cret") || w.Check("s3cret ") {
		t.Errorf("round trip failed: %s", w)
	}
	// Verifiers made by PostgreSQL 15 (CREATE ROLE ... PASSWORD with
	// password_encryption scram-sha-256), for an ASCII password and for
	// one that SASLprep changes (NO-BREAK SPACE → space, NFKC: Ⅳ → IV).
	for _, tc := range []struct{ verifier, password, wrong string }{
		{"SCRAM-SHA-256$4096:OIA1I0gqIb0VyQuGVtYqYA==$BkrfELAO2PGD/KowLtdqZ3z0kWOTFS8umm5lyigCkwU=:0WcPx2sOurdRlE5YBKQqQKyb0w2zHXnOGg+/F2DWFAk=",
			"foobar", "Foobar"},
		{"SCRAM-SHA-256$4096:1qFnGMV8QLa0UPswACD48A==$iccM8I30er9o2o2xcEG6cw/GHTN+0u2iNWcmrikQBec=:/mJMWLfEhgZpD5Km9bTrmACPX/YEbnxNKZulHUEgRaI=",
			"p\u00e4ss\u00a0w\u2163rd", "p\u00e4ss\u00a0wIVrd!"},
	} {
		pv, err := ParseScramVerifier(tc.verifier)
		if err != nil {
			t.Fatal(err)
		}
		if !pv.Check(tc.password) || pv.Check(tc.wrong) {
			t.Errorf("PostgreSQL verifier %s does not match %q only", tc.verifier[:30], tc.password)
		}
		if pv.String() != tc.verifier {
			t.Errorf("String() = %s", pv.String())
		}
	}
	if saslPrep("p\u00e4ss\u00a0w\u2163rd") != "p\u00e4ss wIVrd" {
		t.Errorf("saslPrep = %q", saslPrep("p\u00e4ss\u00a0w\u2163rd"))
	}
	for _, raw := range []string{"plain ascii\x01", "bad\xffutf8", "private\ue000use", "\u05d0mixed"} {
		if got := saslPrep(raw); got != raw {
			t.Errorf("saslPrep(%q) = %q, want the raw password", raw, got)
		}
	}
	for _, bad := range []string{"", "md5abc", "SCRAM-SHA-256$x:AA==$AA==:AA==", "SCRAM-SHA-256$4096:AA==$AA==:AA==",
		"SCRAM-SHA-256$4096:!!$" + strings.Repeat("A", 44) + ":" + strings.Repeat("A", 44)} {
		if _, err := ParseScramVerifier(bad); err == nil {
			t.Errorf("ParseScramVerifier(%q) succeeded", bad)
		}
	}
}

// FuzzSCRAM feeds arbitrary client messages to the server side of SCRAM:
// it must not panic and must never accept a proof it did not verify.
func FuzzSCRAM(f *testing.F) {
	f.Add(true, "p=tls-server-end-point,,n=,r=abc", "c=cD10bHMtc2VydmVyLWVuZC1wb2ludCws,r=abcXYZ,p=AAAA")
	f.Add(false, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO", "c=biws,r=rOprNGfwEbeRWgbNEkqOXYZ,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	f.Add(false, "y,,n=,r=x,e=ext", "c=eSws,r=xXYZ,e=1,p=")
	v, err := deriveScramVerifier("pw", []byte("salt"), 4096)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, plus bool, first, final string) {
		ss := &scramServer{v: v, nonce: func() (string, error) { return "XYZ", nil }}
		mech := mechSCRAM
		if plus {
			ss.cbData = []byte("0123456789abcdef0123456789abcdef")
			mech = mechSCRAMPlus
		}
		if _, err := ss.first(mech, []byte(first)); err != nil {
			return
		}
		if _, err := ss.final([]byte(final)); err == nil {
			t.Fatalf("accepted first=%q final=%q", first, final)
		}
	})
}
