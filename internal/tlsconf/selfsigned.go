package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Local is a local CA and the server certificate it issued (SelfSigned).
type Local struct {
	// CAFile is the CA certificate clients must trust.
	CAFile string
	// CertFile and KeyFile are the server certificate and its key.
	CertFile, KeyFile string
	// Created is set when this call made the CA (first start).
	Created bool
	// Reissued is set when this call issued a new server certificate.
	Reissued bool
}

// Lifetimes of what SelfSigned makes.
const (
	caLifetime     = 10 * 365 * 24 * time.Hour
	serverLifetime = 365 * 24 * time.Hour
	// renewBefore: a server certificate closer than this to its end is reissued.
	renewBefore = 30 * 24 * time.Hour
)

// SelfSigned makes, in dir, a local CA (ca.pem, ca.key) and a server
// certificate it signs (server.pem, server.key) valid for hosts (DNS names
// or IP addresses). On later calls it reuses both, reissuing the server
// certificate from the same CA only when it lacks one of hosts or is within
// 30 days of its end, so clients keep trusting the same CA. Keys are ECDSA
// P-256, written mode 0600.
func SelfSigned(dir string, hosts []string) (Local, error) {
	l := Local{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server.key")}
	caKeyFile := filepath.Join(dir, "ca.key")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return l, fmt.Errorf("tls self-signed: %w", err)
	}
	ca, caKey, err := loadPair(l.CAFile, caKeyFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
		ca, caKey, err = newCA()
		if err != nil {
			return l, err
		}
		if err := writePair(l.CAFile, caKeyFile, ca.Raw, caKey); err != nil {
			return l, err
		}
		l.Created = true
	case err != nil:
		return l, err
	}
	cert, _, err := loadPair(l.CertFile, l.KeyFile)
	if err == nil && covers(cert, hosts) && time.Until(cert.NotAfter) > renewBefore && cert.CheckSignatureFrom(ca) == nil {
		return l, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return l, err
	}
	der, key, err := issueServer(ca, caKey, hosts)
	if err != nil {
		return l, err
	}
	if err := writePair(l.CertFile, l.KeyFile, der, key); err != nil {
		return l, err
	}
	l.Reissued = true
	return l, nil
}

// covers reports whether c names every host.
func covers(c *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
				return false
			}
		} else if !slices.Contains(c.DNSNames, h) {
			return false
		}
	}
	return true
}

func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("tls self-signed: serial: %w", err)
	}
	return n, nil
}

func newCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tls self-signed: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: "Floe local CA " + host, Organization: []string{"Floe (self-signed, development only)"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("tls self-signed: CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("tls self-signed: CA: %w", err)
	}
	return ca, key, nil
}

func issueServer(ca *x509.Certificate, caKey *ecdsa.PrivateKey, hosts []string) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tls self-signed: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: "floe"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(serverLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("tls self-signed: server certificate: %w", err)
	}
	return der, key, nil
}

// loadPair reads a certificate and its ECDSA key; an error wrapping
// os.ErrNotExist means either file is missing.
func loadPair(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		if _, serr := os.Stat(certFile); errors.Is(serr, os.ErrNotExist) {
			return nil, nil, serr
		}
		if _, serr := os.Stat(keyFile); errors.Is(serr, os.ErrNotExist) {
			return nil, nil, serr
		}
		return nil, nil, fmt.Errorf("tls self-signed: %s: %w", certFile, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || pair.Leaf == nil {
		return nil, nil, fmt.Errorf("tls self-signed: %s: not an ECDSA key pair made by floe", certFile)
	}
	return pair.Leaf, key, nil
}

// writePair writes a certificate (0644) and its key (0600), each through a
// temporary file renamed into place.
func writePair(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("tls self-signed: %w", err)
	}
	if err := writeFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return err
	}
	return writeFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeFile(name string, b []byte, mode os.FileMode) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return fmt.Errorf("tls self-signed: %w", err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return fmt.Errorf("tls self-signed: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("tls self-signed: %w", err)
	}
	return nil
}
