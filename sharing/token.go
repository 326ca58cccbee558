package sharing

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// TokenPrefix starts every recipient bearer token, so that one found in a
// log or a repository is recognisable (and scannable) as a Floe recipient
// token.
const TokenPrefix = "floe_rcpt_"

// tokenBytes is the randomness of a token: 256 bits.
const tokenBytes = 32

// tokenLen is the length of a token: the prefix and 43 base64url characters.
var tokenLen = len(TokenPrefix) + base64.RawURLEncoding.EncodedLen(tokenBytes)

// newToken returns a new random bearer token.
func newToken() string {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the OS RNG failing is unrecoverable
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// newID returns a random identifier with prefix (not secret).
func newID(prefix string) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return prefix + hex.EncodeToString(b)
}

// wellFormed reports whether s has the shape of a recipient token.
func wellFormed(s string) bool {
	if len(s) != tokenLen || !strings.HasPrefix(s, TokenPrefix) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s[len(TokenPrefix):])
	return err == nil
}

// HashToken returns the stored form of a token: the hex SHA-256 of it. A
// token carries 256 random bits, so a fast hash is enough: unlike a
// password it cannot be guessed, and the store never holds the token.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// CredentialPrincipal is the principal name under which storage
// credentials and pre-signed URLs are vended to a recipient
// (vend.Session.Principal; its TokenID is r.TokenID). Revoking a grant of a
// share, removing an object or dropping a share records a grant revocation
// for that name, so those credentials stop working on every node.
func CredentialPrincipal(recipientName string) string { return "recipient:" + recipientName }

// Credential is a recipient's bearer token as it is shown, once, when the
// recipient is created or its token rotated.
type Credential struct {
	Token     string
	TokenID   string
	ExpiresAt time.Time // zero: never
}

// Profile is a Delta Sharing profile file (version 1).
type Profile struct {
	ShareCredentialsVersion int    `json:"shareCredentialsVersion"`
	Endpoint                string `json:"endpoint"`
	BearerToken             string `json:"bearerToken"`
	// ExpirationTime is ISO 8601 UTC; absent when the token never expires.
	ExpirationTime string `json:"expirationTime,omitempty"`
}

// DeltaSharingPrefix is the path under which the Delta Sharing server is
// mounted.
const DeltaSharingPrefix = "/delta-sharing"

// Profile returns the Delta Sharing profile file of c for a server at
// baseURL (scheme://host[:port][/path], without a trailing slash).
func (c Credential) Profile(baseURL string) Profile {
	p := Profile{ShareCredentialsVersion: 1, Endpoint: strings.TrimSuffix(baseURL, "/") + DeltaSharingPrefix + "/", BearerToken: c.Token}
	if !c.ExpiresAt.IsZero() {
		p.ExpirationTime = c.ExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	return p
}

// IcebergCatalog is the connection of an Iceberg REST client (PyIceberg,
// Spark, Trino) to the catalog of one share.
type IcebergCatalog struct {
	Type      string `json:"type"`
	URI       string `json:"uri"`
	Warehouse string `json:"warehouse"`
	Token     string `json:"token"`
}

// ShareCatalogURI returns the Iceberg REST catalog URI of share on a server
// at baseURL.
func ShareCatalogURI(baseURL, share string) string {
	return strings.TrimSuffix(baseURL, "/") + "/shares/" + share + "/iceberg"
}

// Iceberg returns the Iceberg catalog connection of c to share.
func (c Credential) Iceberg(baseURL, share string) IcebergCatalog {
	return IcebergCatalog{Type: "rest", URI: ShareCatalogURI(baseURL, share), Warehouse: share, Token: c.Token}
}
