package netlimit

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"testing"
	"time"
)

// serveTLS runs a Server for h with lim over TLS; it returns the server,
// its address and a client configuration trusting it.
func serveTLS(t *testing.T, lim Limits, h http.Handler) (*Server, string, *tls.Config) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, DNSNames: []string{"test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		IsCA: true, BasicConstraintsValid: true, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New("test", h, lim, nil)
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
	go func() { _ = s.ServeTLS(ln, cfg) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s, ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "test"}
}

// Over TLS the caps hold from the accept: connections that never finish
// their handshake count as pending and are displaced, and a prompt TLS
// client is served past them.
func TestTLSHandshakesCountAsPending(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxConns, lim.MaxPendingPerIP, lim.HeaderTimeout = 16, 4, 5*time.Second
	s, addr, client := serveTLS(t, lim, readAll)
	var silent []net.Conn
	for range 12 {
		silent = append(silent, dial(t, addr, ""))
	}
	waitFor(t, "silent TLS connections displaced at the per-IP cap", func() bool {
		st := s.Stats()
		return st.Evicted >= 8 && st.Pending <= 4
	})
	if !closed(silent[0], time.Second) {
		t.Error("the oldest silent TLS connection is still open")
	}
	tr := &http.Transport{TLSClientConfig: client}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("https://" + addr + "/")
	if err != nil {
		t.Fatalf("a prompt TLS client past the flood: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "0" || resp.TLS == nil {
		t.Fatalf("got %d %q", resp.StatusCode, b)
	}
	// The served connection went idle: it is tracked through the TLS layer.
	waitFor(t, "the TLS connection tracked as idle", func() bool {
		st := s.Stats()
		return st.Open >= 1 && st.Pending <= 4
	})
}

// The handshake is bounded by HeaderTimeout.
func TestTLSHandshakeTimesOut(t *testing.T) {
	lim := DefaultLimits()
	lim.HeaderTimeout = 200 * time.Millisecond
	_, addr, _ := serveTLS(t, lim, readAll)
	c := dial(t, addr, "")
	start := time.Now()
	if !closed(c, 3*time.Second) {
		t.Fatal("a client that never sent a ClientHello kept its connection")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("closed after %s, want about the header timeout", d)
	}
}
