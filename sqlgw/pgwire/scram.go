package pgwire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"hash"
	"strconv"
	"strings"
)

// SASL mechanism names.
const (
	mechSCRAM     = "SCRAM-SHA-256"
	mechSCRAMPlus = "SCRAM-SHA-256-PLUS"
)

// errSCRAM is returned for any failed exchange; the client learns only
// that authentication failed.
var errSCRAM = errors.New("scram authentication failed")

// scramServer runs the server side of one SCRAM-SHA-256(-PLUS) exchange.
type scramServer struct {
	v *ScramVerifier
	// cbData is the tls-server-end-point hash of the server certificate;
	// nil when the connection offers no channel binding.
	cbData []byte
	// nonce makes the server nonce (tests inject it).
	nonce func() (string, error)

	mech            string
	gs2Header       string
	clientFirstBare string
	serverFirst     string
	fullNonce       string
}

// mechanisms returns the SASL mechanisms offered, preferred first.
func (s *scramServer) mechanisms() []string {
	if s.cbData != nil {
		return []string{mechSCRAMPlus, mechSCRAM}
	}
	return []string{mechSCRAM}
}

func randomNonce() (string, error) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawStdEncoding.EncodeToString(b), nil
}

// first handles the client-first-message and returns the server-first-message.
func (s *scramServer) first(mech string, msg []byte) ([]byte, error) {
	switch {
	case mech == mechSCRAM:
	case mech == mechSCRAMPlus && s.cbData != nil:
	default:
		return nil, errSCRAM
	}
	s.mech = mech
	m := string(msg)
	// gs2-header = gs2-cbind-flag "," [authzid] ","
	flag, rest, ok := strings.Cut(m, ",")
	if !ok {
		return nil, errSCRAM
	}
	switch {
	case flag == "n":
		if mech == mechSCRAMPlus {
			return nil, errSCRAM
		}
	case flag == "y":
		// The client could bind but thinks we cannot: if we offered
		// binding, this is a downgrade (RFC 5802 section 6).
		if mech == mechSCRAMPlus || s.cbData != nil {
			return nil, errSCRAM
		}
	case flag == "p=tls-server-end-point":
		if mech != mechSCRAMPlus {
			return nil, errSCRAM
		}
	default:
		return nil, errSCRAM
	}
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok || authzid != "" { // authorization identities are not supported
		return nil, errSCRAM
	}
	s.gs2Header = flag + ",,"
	s.clientFirstBare = bare
	// client-first-message-bare = [reserved-mext ","] username "," nonce ["," extensions]
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, errSCRAM
	}
	cnonce := attrs[1][2:]
	if cnonce == "" || !printable(cnonce) {
		return nil, errSCRAM
	}
	gen := s.nonce
	if gen == nil {
		gen = randomNonce
	}
	snonce, err := gen()
	if err != nil {
		return nil, err
	}
	s.fullNonce = cnonce + snonce
	s.serverFirst = "r=" + s.fullNonce + ",s=" + base64.StdEncoding.EncodeToString(s.v.Salt) +
		",i=" + strconv.Itoa(s.v.Iterations)
	return []byte(s.serverFirst), nil
}

// final checks the client-final-message and returns the server-final-message.
func (s *scramServer) final(msg []byte) ([]byte, error) {
	m := string(msg)
	i := strings.LastIndex(m, ",p=")
	if i < 0 {
		return nil, errSCRAM
	}
	withoutProof, proofB64 := m[:i], m[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, errSCRAM
	}
	cb, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil {
		return nil, errSCRAM
	}
	want := []byte(s.gs2Header)
	if s.mech == mechSCRAMPlus {
		want = append(want, s.cbData...)
	}
	if !hmac.Equal(cb, want) {
		return nil, errSCRAM
	}
	if subtle.ConstantTimeCompare([]byte(attrs[1][2:]), []byte(s.fullNonce)) != 1 {
		return nil, errSCRAM
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != sha256.Size || len(s.v.StoredKey) != sha256.Size {
		return nil, errSCRAM
	}
	authMsg := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	clientSig := hmacSHA256(s.v.StoredKey, authMsg)
	clientKey := make([]byte, sha256.Size)
	for j := range clientKey {
		clientKey[j] = proof[j] ^ clientSig[j]
	}
	stored := sha256.Sum256(clientKey)
	if !hmac.Equal(stored[:], s.v.StoredKey) {
		return nil, errSCRAM
	}
	serverSig := hmacSHA256(s.v.ServerKey, authMsg)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), nil
}

// printable reports whether s holds only the characters RFC 5802 allows in
// a nonce (printable ASCII except ',').
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e || s[i] == ',' {
			return false
		}
	}
	return true
}

// certEndPoint computes the tls-server-end-point channel binding data
// (RFC 5929 section 4.1) of a certificate; nil when it is undefined for the
// certificate's signature algorithm (e.g. Ed25519).
func certEndPoint(cert *tls.Certificate) []byte {
	if cert == nil || len(cert.Certificate) == 0 {
		return nil
	}
	leaf := cert.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil
		}
	}
	var h hash.Hash
	switch leaf.SignatureAlgorithm {
	case x509.MD5WithRSA, x509.SHA1WithRSA, x509.ECDSAWithSHA1,
		x509.SHA256WithRSA, x509.SHA256WithRSAPSS, x509.ECDSAWithSHA256:
		h = sha256.New()
	case x509.SHA384WithRSA, x509.SHA384WithRSAPSS, x509.ECDSAWithSHA384:
		h = sha512.New384()
	case x509.SHA512WithRSA, x509.SHA512WithRSAPSS, x509.ECDSAWithSHA512:
		h = sha512.New()
	default:
		return nil
	}
	h.Write(leaf.Raw)
	return h.Sum(nil)
}
