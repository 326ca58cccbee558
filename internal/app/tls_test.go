package app_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// selfSigned is the testkit option of floe serve --tls-self-signed.
func selfSigned(c *app.Config) { c.TLSSelfSigned = true }

// trustFloe makes f's HTTP clients trust the CA --tls-self-signed made
// in f's data directory (and present cert, if any); it returns the CA pool.
func trustFloe(t *testing.T, f *testkit.Floe, cert ...tls.Certificate) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(f.Dir, "tls", "ca.pem"))
	if err != nil {
		t.Fatalf("the CA of --tls-self-signed: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("ca.pem holds no certificate")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: cert}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	f.Transport.Base, f.ClientTransport.Base = tr, tr
	return pool
}

// s3Over returns an S3 client for the vended config c trusting pool.
func s3Over(c map[string]string, pool *x509.CertPool, cert ...tls.Certificate) *s3.Client {
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: cert}}}
	return s3.New(s3.Options{BaseEndpoint: aws.String(c["s3.endpoint"]), Region: c["client.region"], UsePathStyle: true, HTTPClient: hc,
		Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])})
}

// metadataKey is the object key of a table's metadata file.
func metadataKey(f *testkit.Floe, tb testkit.Table) string {
	return strings.TrimPrefix(tb.MetadataLocation, "s3://"+f.Warehouse+"/")
}

// Attack: the REST catalog carried client secrets and tokens, and the S3
// endpoint vended credentials and data, in plaintext.
func TestTLS_RESTAndS3OverHTTPS(t *testing.T) {
	f := testkit.Start(t, selfSigned)
	pool := trustFloe(t, f)
	if !strings.HasPrefix(f.URL, "https://") {
		t.Fatalf("REST catalog URL %s: not https", f.URL)
	}
	f.CreateTable(t, "ns", "t")
	r := f.Do(t, "GET", f.P("/namespaces/ns/tables/t"), nil, "X-Iceberg-Access-Delegation", "vended-credentials")
	if r.Status != 200 {
		t.Fatalf("loadTable over https: %d %s", r.Status, r.Body)
	}
	if hsts := r.Header.Get("Strict-Transport-Security"); !strings.Contains(hsts, "max-age=") {
		t.Errorf("no HSTS header on an HTTPS response: %q", hsts)
	}
	var tb testkit.Table
	r.JSON(t, &tb)
	if ep := tb.Config["s3.endpoint"]; !strings.HasPrefix(ep, "https://") {
		t.Fatalf("vended s3.endpoint %q does not follow the scheme served", ep)
	}
	obj, err := s3Over(tb.Config, pool).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(f.Warehouse), Key: aws.String(metadataKey(f, tb))})
	if err != nil {
		t.Fatalf("GetObject over https with the vended credentials: %v", err)
	}
	b, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	if !strings.Contains(string(b), `"format-version"`) {
		t.Fatalf("metadata over https: %.100s", b)
	}
	// The OAuth issuer and token endpoint the server advertises are https.
	md := f.Do(t, "GET", "/.well-known/oauth-authorization-server", nil)
	var meta struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	md.JSON(t, &meta)
	if !strings.HasPrefix(meta.Issuer, "https://") || !strings.HasPrefix(meta.TokenEndpoint, "https://") {
		t.Fatalf("OAuth metadata over TLS advertises %+v", meta)
	}
}

// Attack: a client speaking plain HTTP to a TLS listener must not be
// served, and must learn why.
func TestTLS_PlainHTTPRefused(t *testing.T) {
	f := testkit.Start(t, selfSigned)
	for name, base := range map[string]string{"rest": f.URL, "s3": f.App.S3URL()} {
		plain := "http://" + hostOf(t, base) + "/v1/config"
		resp, err := http.Get(plain)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), "HTTP request to an HTTPS server") {
			t.Errorf("%s: plain HTTP to the TLS listener got %d %q", name, resp.StatusCode, b)
		}
	}
}

// Attack: the SQL endpoint must take the shared certificate, verifiable
// by a client with sslmode=verify-full.
func TestTLS_SQLVerifyFull(t *testing.T) {
	f := testkit.Start(t, selfSigned)
	trustFloe(t, f)
	tok := f.Token(t)
	dsn := "postgres://admin@" + f.SQLAddr + "/floe?sslmode=verify-full&sslrootcert=" + filepath.Join(f.Dir, "tls", "ca.pem")
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = tok
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgx sslmode=verify-full: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT 41 + 1").Scan(&n); err != nil || n != 42 {
		t.Fatalf("query over TLS: %d %v", n, err)
	}
	if !conn.PgConn().Conn().(interface{ ConnectionState() tls.ConnectionState }).ConnectionState().HandshakeComplete {
		t.Fatal("not TLS")
	}
}

// The TLS handshake counts as "not authenticated yet": a client that
// connects and never says hello is closed by the header deadline.
func TestTLS_SilentHandshakeBoundedByHeaderTimeout(t *testing.T) {
	f := testkit.Start(t, selfSigned, limits(func(h *app.HTTPLimits) { h.HeaderTimeout = 300 * time.Millisecond }))
	for _, base := range []string{f.URL, f.App.S3URL()} {
		if d := closedWithin(t, hostOf(t, base), "", "", time.Hour, 5*time.Second); d > 2*time.Second {
			t.Errorf("%s: a silent TLS client held its connection %s (header timeout 300ms)", base, d)
		}
	}
}

// Replacing the certificate files is picked up by the next handshake (at
// most a second later), without a restart.
func TestTLS_CertificateReloadedWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	ca1, cert1, key1 := writeCA(t, filepath.Join(dir, "one"), "localhost", "127.0.0.1")
	ca2, cert2, key2 := writeCA(t, filepath.Join(dir, "two"), "localhost", "127.0.0.1")
	live := filepath.Join(dir, "live")
	if err := os.MkdirAll(live, 0o700); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(live, "cert.pem"), filepath.Join(live, "key.pem")
	cp := func(src, dst string, mtime time.Time) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+".tmp", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dst+".tmp", mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dst+".tmp", dst); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	cp(cert1, certFile, t0)
	cp(key1, keyFile, t0)
	f := testkit.Start(t, func(c *app.Config) { c.TLSCert, c.TLSKey = certFile, keyFile })
	get := func(pool *x509.CertPool) error {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(f.URL + "/v1/config")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.TLS == nil {
			return errors.New("served in plaintext")
		}
		return nil
	}
	if err := get(ca1); err != nil {
		t.Fatalf("first certificate: %v", err)
	}
	cp(cert2, certFile, t0.Add(time.Minute))
	cp(key2, keyFile, t0.Add(time.Minute))
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := get(ca2)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replaced certificate is not served 3s later: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeCA writes a CA and a server certificate for hosts under dir; it
// returns the CA pool and the server certificate and key files.
func writeCA(t *testing.T, dir string, hosts ...string) (*x509.CertPool, string, string) {
	t.Helper()
	ca, caKey := newTestCA(t, "test CA "+dir)
	leaf, key := issue(t, ca, caKey, "floe", hosts, x509.ExtKeyUsageServerAuth)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePEM(t, certFile, "CERTIFICATE", leaf.Raw)
	kb, _ := x509.MarshalECPrivateKey(key)
	writePEM(t, keyFile, "EC PRIVATE KEY", kb)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, certFile, keyFile
}

func writePEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func newTestCA(t *testing.T, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return ca, key
}

// issue signs a leaf certificate for cn (and hosts as DNS/IP SANs).
func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, hosts []string, usage x509.ExtKeyUsage) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{usage},
		KeyUsage: x509.KeyUsageDigitalSignature}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return leaf, key
}

// clientPair is a client certificate for cn issued by ca.
func clientPair(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string) tls.Certificate {
	leaf, key := issue(t, ca, caKey, cn, nil, x509.ExtKeyUsageClientAuth)
	return tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}
}

// Attack: without mTLS, a network position was enough to talk to the
// catalog; with it, a client certificate issued by the configured CA names
// the principal, an unmapped one is refused (and audited), one from
// another CA fails the handshake.
func TestMTLS_ClientCertificateActsAsPrincipal(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newTestCA(t, "client CA")
	caFile := filepath.Join(dir, "client-ca.pem")
	writePEM(t, caFile, "CERTIFICATE", ca.Raw)
	f := testkit.Start(t, selfSigned, func(c *app.Config) {
		c.TLSClientCA = caFile
		c.RESTTLSClientAuth = "optional"
		c.S3TLSClientAuth = "optional"
		c.TLSClientPrincipals = map[string]string{"cn:etl-job": "etl", "cn:admin-box": "admin"}
	})
	trustFloe(t, f)
	f.NewPrincipal(t, "etl")
	f.CreateTable(t, "ns", "t")
	// The admin's table access (vended before any certificate is used).
	lt := f.Do(t, "GET", f.P("/namespaces/ns/tables/t"), nil, "X-Iceberg-Access-Delegation", "vended-credentials")
	var tb testkit.Table
	lt.JSON(t, &tb)

	etl := clientPair(t, ca, caKey, "etl-job")
	pool := trustFloe(t, f, etl)
	// No token: the certificate alone authenticates as etl.
	r := f.DoAs(t, "", "GET", "/api/v1/whoami", nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"etl"`) {
		t.Fatalf("whoami with etl's certificate: %d %s", r.Status, r.Body)
	}
	// A token that does not verify (PyIceberg sends "Bearer None") claims
	// nothing: the certificate still authenticates.
	if r := f.DoAs(t, "None", "GET", "/api/v1/whoami", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"etl"`) {
		t.Fatalf("whoami with etl's certificate and a bogus token: %d %s", r.Status, r.Body)
	}
	// A catalog call acts as etl, who holds no grant here.
	if r := f.DoAs(t, "", "GET", f.P("/namespaces"), nil); r.Status != 403 || !strings.Contains(string(r.Body), `principal \"etl\"`) {
		t.Fatalf("REST call with etl's certificate: %d %s", r.Status, r.Body)
	}
	// A token of another principal over etl's certificate is refused.
	if r := f.DoAs(t, f.Token(t), "GET", f.P("/namespaces"), nil); r.Status != 403 || !strings.Contains(string(r.Body), "certificate") {
		t.Fatalf("admin token over etl's certificate: %d %s", r.Status, r.Body)
	}
	// S3: the admin's vended credential over etl's certificate is refused;
	// over the admin's certificate it reads.
	get := func(cert tls.Certificate) error {
		obj, err := s3Over(tb.Config, pool, cert).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(f.Warehouse), Key: aws.String(metadataKey(f, tb))})
		if err == nil {
			obj.Body.Close()
		}
		return err
	}
	if err := get(etl); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("admin's S3 credential over etl's certificate: %v", err)
	}
	if err := get(clientPair(t, ca, caKey, "admin-box")); err != nil {
		t.Fatalf("admin's S3 credential over admin's certificate: %v", err)
	}

	// An unmapped certificate: refused with a clear error, and audited.
	trustFloe(t, f, clientPair(t, ca, caKey, "intruder"))
	r = f.DoAs(t, "", "GET", f.P("/namespaces"), nil)
	if r.Status != 401 || !strings.Contains(string(r.Body), "not mapped to a principal") {
		t.Fatalf("unmapped certificate: %d %s", r.Status, r.Body)
	}
	if err := get(clientPair(t, ca, caKey, "intruder")); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("unmapped certificate on S3: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		evs, err := f.App.Store().AuditQuery(context.Background(), audit.Query{Action: "auth.client_certificate", Newest: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) >= 2 && evs[0].Outcome == audit.OutcomeUnauthenticated && strings.Contains(string(evs[0].Detail), "cn:intruder") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no audit event for the unmapped certificate: %+v", evs)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A certificate from another CA: refused at the handshake (sent even
	// though the server does not name its CA, as a hostile client would).
	other, otherKey := newTestCA(t, "stranger CA")
	stranger := clientPair(t, other, otherKey, "etl-job")
	c, err := tls.Dial("tcp", hostOf(t, f.URL), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1",
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &stranger, nil }})
	if err == nil {
		_, _ = io.WriteString(c, "GET /v1/config HTTP/1.1\r\nHost: x\r\n\r\n")
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a certificate from an unknown CA: %v, want a handshake failure", err)
	}
}
