package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// handshake dials a TLS server with cfg on a fresh listener and returns the
// certificate it served (or the handshake error).
func handshake(t *testing.T, srv *tls.Config, client *tls.Config) (*x509.Certificate, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		tc := tls.Server(c, srv)
		_ = tc.Handshake()
		_ = tc.Close()
	}()
	defer wg.Wait()
	c, err := tls.Dial("tcp", ln.Addr().String(), client)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// TLS 1.3: a refused client certificate surfaces on the first read.
	if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !strings.Contains(err.Error(), "EOF") {
		return nil, err
	}
	return c.ConnectionState().PeerCertificates[0], nil
}

func pool(t *testing.T, caFile string) *x509.CertPool {
	t.Helper()
	p, err := LoadCAs(caFile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSelfSignedReusedAndVerifiable(t *testing.T) {
	dir := t.TempDir()
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	first, err := SelfSigned(dir, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Created || !first.Reissued {
		t.Fatalf("first call: %+v, want the CA created and a certificate issued", first)
	}
	for _, f := range []string{filepath.Join(dir, "ca.key"), first.KeyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	ca1, _ := os.ReadFile(first.CAFile)
	cert1, _ := os.ReadFile(first.CertFile)

	again, err := SelfSigned(dir, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || again.Reissued {
		t.Fatalf("second call: %+v, want both reused", again)
	}
	if b, _ := os.ReadFile(again.CertFile); string(b) != string(cert1) {
		t.Fatal("server certificate changed on restart")
	}

	more, err := SelfSigned(dir, append(hosts, "floe.internal"))
	if err != nil {
		t.Fatal(err)
	}
	if more.Created || !more.Reissued {
		t.Fatalf("new host: %+v, want the certificate reissued from the same CA", more)
	}
	if b, _ := os.ReadFile(more.CAFile); string(b) != string(ca1) {
		t.Fatal("the CA changed: clients would have to trust it again")
	}

	r, err := NewReloader(more.CertFile, more.KeyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Server(r, ClientAuthOff, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"localhost", "floe.internal", "127.0.0.1"} {
		if _, err := handshake(t, srv, &tls.Config{RootCAs: pool(t, more.CAFile), ServerName: name}); err != nil {
			t.Errorf("verify as %s: %v", name, err)
		}
	}
	if _, err := handshake(t, srv, &tls.Config{RootCAs: pool(t, more.CAFile), ServerName: "evil.example"}); err == nil {
		t.Error("a name the certificate does not carry verified")
	}
}

func TestReloaderServesReplacedCertificate(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	la, err := SelfSigned(a, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	lb, err := SelfSigned(b, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	live := t.TempDir()
	certFile, keyFile := filepath.Join(live, "c.pem"), filepath.Join(live, "k.pem")
	install := func(l Local, mtime time.Time) {
		for src, dst := range map[string]string{l.CertFile: certFile, l.KeyFile: keyFile} {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(dst, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	t0 := time.Now().Add(-time.Hour)
	install(la, t0)
	r, err := NewReloader(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	r.now = func() time.Time { return clock }
	srv, err := Server(r, ClientAuthOff, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	trustA := &tls.Config{RootCAs: pool(t, la.CAFile), ServerName: "localhost"}
	trustB := &tls.Config{RootCAs: pool(t, lb.CAFile), ServerName: "localhost"}
	if _, err := handshake(t, srv, trustA); err != nil {
		t.Fatalf("first certificate: %v", err)
	}

	install(lb, t0.Add(time.Minute))
	// Within the reload interval the files are not looked at.
	clock = clock.Add(ReloadInterval / 2)
	if _, err := handshake(t, srv, trustA); err != nil {
		t.Fatalf("within the reload interval: %v", err)
	}
	clock = clock.Add(ReloadInterval)
	if _, err := handshake(t, srv, trustB); err != nil {
		t.Fatalf("after replacing the files, the next handshake does not serve the new certificate: %v", err)
	}

	// A broken replacement keeps the loaded certificate.
	if err := os.WriteFile(certFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * ReloadInterval)
	if _, err := handshake(t, srv, trustB); err != nil {
		t.Fatalf("a broken replacement dropped the working certificate: %v", err)
	}
}

func TestServerRefusesOldTLS(t *testing.T) {
	l, err := SelfSigned(t.TempDir(), []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReloader(l.CertFile, l.KeyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Server(r, ClientAuthOff, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := &tls.Config{RootCAs: pool(t, l.CAFile), ServerName: "localhost", MaxVersion: tls.VersionTLS11}
	if _, err := handshake(t, srv, old); err == nil {
		t.Fatal("a TLS 1.1 client completed a handshake")
	}
	weak := &tls.Config{RootCAs: pool(t, l.CAFile), ServerName: "localhost", MaxVersion: tls.VersionTLS12,
		CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}
	if _, err := handshake(t, srv, weak); err == nil {
		t.Fatal("a client offering only a CBC suite completed a handshake")
	}
}

// clientCert issues a client certificate with cn and uris from a fresh CA;
// it returns the CA pool and the certificate.
func clientCert(t *testing.T, cn string, uris ...string) (*x509.CertPool, tls.Certificate, *x509.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ct := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		ct.URIs = append(ct.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, ct, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	p := x509.NewCertPool()
	p.AddCert(ca)
	return p, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, leaf
}

func TestClientCertificateFromUnknownCARefusedAtHandshake(t *testing.T) {
	l, err := SelfSigned(t.TempDir(), []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReloader(l.CertFile, l.KeyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	trusted, good, _ := clientCert(t, "etl")
	_, stranger, _ := clientCert(t, "etl")
	for _, tc := range []struct {
		auth  ClientAuth
		cert  *tls.Certificate
		allow bool
	}{
		{ClientAuthRequire, &good, true},
		{ClientAuthRequire, &stranger, false},
		{ClientAuthRequire, nil, false},
		{ClientAuthOptional, &good, true},
		{ClientAuthOptional, &stranger, false},
		{ClientAuthOptional, nil, true},
	} {
		srv, err := Server(r, tc.auth, trusted, nil)
		if err != nil {
			t.Fatal(err)
		}
		cli := &tls.Config{RootCAs: pool(t, l.CAFile), ServerName: "localhost"}
		if tc.cert != nil {
			cli.Certificates = []tls.Certificate{*tc.cert}
		}
		_, err = handshake(t, srv, cli)
		if (err == nil) != tc.allow {
			t.Errorf("%s, cert %v: err %v, want allowed=%v", tc.auth, tc.cert != nil, err, tc.allow)
		}
	}
	if _, err := Server(r, ClientAuthRequire, nil, nil); err == nil {
		t.Error("client certificates without a client CA accepted")
	}
}

func TestPrincipalMap(t *testing.T) {
	m := PrincipalMap{"cn:etl-job": "etl", "uri:spiffe://corp/etl": "etl", "uri:spiffe://corp/bi": "bi"}
	for _, tc := range []struct {
		name, cn string
		uris     []string
		want     string
		err      bool
	}{
		{"by cn", "etl-job", nil, "etl", false},
		{"by uri", "whoever", []string{"spiffe://corp/bi"}, "bi", false},
		{"cn and uri agree", "etl-job", []string{"spiffe://corp/etl"}, "etl", false},
		{"cn and uri disagree", "etl-job", []string{"spiffe://corp/bi"}, "", true},
		{"unmapped", "intruder", []string{"spiffe://corp/other"}, "", true},
		{"no identity", "", nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, leaf := clientCert(t, tc.cn, tc.uris...)
			got, err := m.Principal(leaf)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("Principal = %q, %v; want %q, err=%v", got, err, tc.want, tc.err)
			}
			if err != nil && !errors.Is(err, ErrUnmapped) {
				t.Fatalf("error %v is not ErrUnmapped", err)
			}
		})
	}
	for _, bad := range []PrincipalMap{{"etl": "etl"}, {"dn:x": "etl"}, {"cn:": "etl"}, {"cn:x": ""}} {
		if bad.Validate() == nil {
			t.Errorf("%v validated", bad)
		}
	}
	if m.Validate() != nil {
		t.Error("a good map did not validate")
	}
}

// FuzzPrincipal: whatever names a certificate carries (the issuing CA is
// trusted to verify, not to choose names wisely), a certificate maps to a
// principal only when exactly one principal is named by its identities.
func FuzzPrincipal(f *testing.F) {
	f.Add("etl-job", "spiffe://corp/etl")
	f.Add("", "spiffe://corp/bi")
	f.Add("uri:spiffe://corp/bi", "")
	f.Add("etl-job\x00", "cn:etl-job")
	m := PrincipalMap{"cn:etl-job": "etl", "uri:spiffe://corp/etl": "etl", "uri:spiffe://corp/bi": "bi"}
	f.Fuzz(func(t *testing.T, cn, uri string) {
		c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
		if u, err := url.Parse(uri); err == nil && uri != "" {
			c.URIs = []*url.URL{u}
		}
		got, err := m.Principal(c)
		named := map[string]bool{}
		for _, id := range Identities(c) {
			if p, ok := m[id]; ok {
				named[p] = true
			}
		}
		switch {
		case err != nil && !errors.Is(err, ErrUnmapped):
			t.Fatalf("error %v is not ErrUnmapped", err)
		case err == nil && (len(named) != 1 || !named[got]):
			t.Fatalf("cn %q uri %q mapped to %q; identities name %v", cn, uri, got, named)
		case err != nil && len(named) == 1:
			t.Fatalf("cn %q uri %q refused though it names exactly %v", cn, uri, named)
		}
	})
}
