// Package vend vends short-lived S3 credentials scoped to one table's
// location: objects of one bucket under one key prefix, read-only unless the
// caller may write the table.
//
// Two minters implement Minter:
//
//   - Embedded mints credentials for Floe's own S3 endpoint. They are
//     verified statelessly by any Floe node: the session token carries the
//     whole Session, encrypted and authenticated under a sealing key that all
//     nodes share through the metadata store (KeyStore), and the secret
//     access key is derived from the token, so no credential is ever stored.
//   - STS mints credentials from AWS STS AssumeRole (or an S3-compatible
//     store's STS, such as MinIO's) with an inline session policy that
//     narrows the role to the granted prefixes (SessionPolicy).
//
// # Embedded credentials
//
// An embedded session token is
//
//	"FV1." + base64url(len(keyID) || keyID || nonce || AES-256-GCM(sealKey, nonce, json(session), aad))
//
// with unpadded base64url, len(keyID) one byte, a 12-byte random nonce, and
// aad = "FV1." || len(keyID) || keyID. The JSON holds every field of the
// Session, the access key id and the expiry (Unix seconds) included; a
// read-files session's file digests (see ReadFiles) follow it as raw bytes,
// 8 per file, its salt being in the JSON. The
// access key id is "FLOE" followed by 16 random characters of [A-Z2-7]. The
// secret access key is the first 30 bytes of HMAC-SHA256(macKey, token),
// standard base64: 40 characters, like an AWS secret key. sealKey and macKey
// are derived from the Key's 32-byte secret with HKDF-SHA256 under distinct
// info strings, so secret access keys (MACs under macKey) tell nothing about
// sealKey. The nonce is random: with weekly rotation a key seals far fewer
// than the 2^32 tokens AES-GCM allows under random nonces.
//
// Resolve reverses this: it bounds the token (at most MaxTokenLen bytes),
// finds the key by id (reloading the keys from the store, at most once a
// second, when the id is unknown: another node may have rotated), opens the
// token (any tampering, or a token of another Floe deployment, fails with
// ErrInvalidToken), checks that the presented access key id is the one in the
// token (ErrInvalidToken otherwise) and that the session has not expired
// (ErrExpired), and derives the secret, with which the S3 layer checks the
// request's SigV4 signature.
//
// Sealing keys rotate: a node minting with a key older than
// EmbeddedOptions.KeyRotation first creates a new one in the store, and keys
// created more than KeyRotation + MaxTTL (plus a few minutes of leeway for
// clock skew between nodes) ago are deleted. A credential never outlives its
// key: its expiry is capped at the key's creation + KeyRotation + MaxTTL.
// Keys are kept in the store in plain (like the OAuth signing keys): whoever
// reads the store can mint credentials.
package vend

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/floe-lake/floe"
)

// Access is what a credential allows.
type Access uint8

// Access levels.
const (
	// Read allows reading and listing objects.
	Read Access = 1
	// ReadWrite allows Read and also writing and deleting objects.
	ReadWrite Access = 2
	// Notice allows nothing: the credential of a principal that may not
	// read the table's files carries, in Session.Notice, why and where to
	// read instead, and Floe's S3 endpoint answers with it.
	Notice Access = 3
	// ReadObjects allows reading objects whose keys the holder knows, but
	// not listing: a credential for a table shared without its history,
	// whose older files must not be found by listing the table's prefix
	// (their keys carry random parts and appear only in metadata the
	// holder is not given).
	ReadObjects Access = 4
	// ReadListed allows reading the objects under the grant's prefix (a
	// derived snapshot's directory, package lake/subset) and the files its
	// manifests name, and no listing: a share catalog's credential for a
	// table shared without history or with a partition filter. The files
	// named by the manifests are checked by Floe's S3 endpoint (its
	// Options.Listed); no STS session policy can express them, so only the
	// embedded minter mints it.
	ReadListed Access = 5
	// ReadFiles allows reading exactly the objects named in
	// Session.Files, all under the grant's prefix, and no listing: the
	// credential of a scan plan filtered by the caller's row policy (see
	// restcat's planpolicy.go), valid for the planned data files and their
	// delete files and nothing else of the table.
	ReadFiles Access = 6
)

// MaxFiles bounds Session.Files: an embedded credential carries a digest
// of each file in its session token, which stays within MaxTokenLen.
const MaxFiles = 1200

// String returns "read" or "read-write".
func (a Access) String() string {
	switch a {
	case Read:
		return "read"
	case ReadWrite:
		return "read-write"
	case Notice:
		return "notice"
	case ReadObjects:
		return "read-objects"
	case ReadListed:
		return "read-listed"
	case ReadFiles:
		return "read-files"
	}
	return fmt.Sprintf("access(%d)", uint8(a))
}

// Grant scopes a credential: objects in Bucket whose key starts with Prefix.
// Prefix is a key prefix ending in "/", such as "crm/accounts-0a1b/"; it is
// never empty.
type Grant struct {
	Bucket string
	Prefix string
	Access Access
}

// Validate reports a grant that no minter accepts, as a floe.Invalid error:
// an empty bucket, or one with "/", wildcard or control characters; a prefix
// that is empty, starts with "/", does not end in "/", has a "." or ".."
// segment or control characters; an unknown Access.
func (g Grant) Validate() error {
	bad := func(format string, args ...any) error {
		return floe.E(floe.Invalid, "credential", "invalid credential grant: "+format, args...)
	}
	switch {
	case g.Bucket == "" || len(g.Bucket) > 255:
		return bad("bucket name must have 1 to 255 characters")
	case strings.ContainsAny(g.Bucket, "/*?$") || hasControl(g.Bucket):
		return bad("bucket name %q has a forbidden character", g.Bucket)
	case g.Prefix == "" || len(g.Prefix) > 1024:
		return bad("prefix must have 1 to 1024 characters")
	case !strings.HasSuffix(g.Prefix, "/") || strings.HasPrefix(g.Prefix, "/"):
		return bad("prefix %q must end and must not start with /", g.Prefix)
	case hasDotSegment(g.Prefix) || hasControl(g.Prefix):
		return bad("prefix %q has a . or .. segment or a control character", g.Prefix)
	case g.Access != Read && g.Access != ReadWrite && g.Access != Notice && g.Access != ReadObjects && g.Access != ReadListed && g.Access != ReadFiles:
		return bad("unknown access %v", g.Access)
	}
	return nil
}

// Session is what a credential stands for. For embedded credentials all of
// it travels inside the encrypted, authenticated session token.
type Session struct {
	// ID identifies the credential for audit correlation (random, not secret).
	ID string
	// AccessKeyID is the credential's access key id.
	AccessKeyID string
	// Principal is the name of the principal the credential was vended to.
	Principal string
	// PrincipalID is that principal's id.
	PrincipalID string
	// TokenID is the id (jti) of the OAuth token the credential was vended
	// under, for audit correlation.
	TokenID string
	// Table is the table ("ns.table") the credential was vended for, for
	// audit; it may be empty.
	Table string
	// Grants is what the credential may access: usually one grant.
	Grants []Grant
	// Expires is when the credential stops working.
	Expires time.Time
	// Epoch is the revocation version (package revoke) the credential is
	// minted under: a revocation of the principal or table with a newer
	// version refuses the credential. With EpochSet the caller chose it
	// (the version the store had when the request's token was checked,
	// before the request was authorized); otherwise the embedded minter
	// sets it from EmbeddedOptions.Epoch (the node's loaded version).
	Epoch int64
	// EpochSet says that Epoch was set by the caller. Not sealed.
	EpochSet bool
	// AllowedCIDRs is the principal's network allowlist (canonical CIDR
	// prefixes) when the credential was minted; the S3 endpoint refuses
	// the credential from any other client address. Empty: any address.
	AllowedCIDRs []string
	// Notice, with Notice grants only, is what the S3 endpoint tells the
	// holder instead of serving anything (one line, at most
	// MaxNoticeLength bytes).
	Notice string
	// Files, with ReadFiles grants only, are the object keys (in the
	// grant's bucket, under its prefix) the credential reads: at most
	// MaxFiles. A session resolved from an embedded token has no Files but
	// their digests (see Allows), so that the token stays small.
	Files []string
	// files is the digest set of Files sealed in an embedded token, as
	// Resolve returns it.
	files *fileSet
}

// MaxNoticeLength bounds Session.Notice.
const MaxNoticeLength = 1024

// NoticeCovers reports whether s is a notice credential whose grant names
// the object key in bucket: its notice is the answer for that object.
func (s Session) NoticeCovers(bucket, key string) bool {
	if s.Notice == "" || hasDotSegment(key) {
		return false
	}
	for _, g := range s.Grants {
		if g.Access == Notice && g.Bucket == bucket && strings.HasPrefix(key, g.Prefix) {
			return true
		}
	}
	return false
}

// Allows reports whether the session's grants allow an operation on key in
// bucket: with write false, reading the object key or listing with key as
// the list prefix; with write true, writing or deleting the object key.
//
// An object key is allowed when it starts with a granted prefix (and the
// grant is ReadWrite, for writes); for a ReadFiles grant, when it is also
// one of the session's Files. A list prefix p is allowed when it starts
// with a granted prefix, or when p + "/" is the granted prefix; such a
// listing may name keys outside the grant ("t1" lists "t10/..."), so the S3
// layer must also filter each listed key with Allows. As reads and lists are
// not told apart, an object named exactly like a granted prefix without its
// "/" may be read too (table locations end in a unique suffix, so no such
// object is expected). Keys with a "." or ".."
// segment are never allowed, so that no normalisation of the key after this
// check can escape the prefix. Allows does not look at Expires.
func (s Session) Allows(bucket, key string, write bool) bool {
	if hasDotSegment(key) {
		return false
	}
	for _, g := range s.Grants {
		if g.Bucket != bucket || g.Prefix == "" {
			continue
		}
		if write {
			if g.Access == ReadWrite && strings.HasPrefix(key, g.Prefix) {
				return true
			}
			continue
		}
		if g.Access == ReadFiles {
			if strings.HasPrefix(key, g.Prefix) && s.hasFile(bucket, key) {
				return true
			}
			continue
		}
		if (g.Access == Read || g.Access == ReadWrite || g.Access == ReadObjects || g.Access == ReadListed) &&
			(strings.HasPrefix(key, g.Prefix) || key+"/" == g.Prefix) {
			return true
		}
	}
	return false
}

// ListedViews returns the prefixes of the session's ReadListed grants in
// bucket: the derived snapshots whose named files it may also read, as the
// S3 endpoint checks (Allows covers only the prefixes themselves).
func (s Session) ListedViews(bucket string) []string {
	var out []string
	for _, g := range s.Grants {
		if g.Access == ReadListed && g.Bucket == bucket && g.Prefix != "" {
			out = append(out, g.Prefix)
		}
	}
	return out
}

// AllowsList reports whether the session may list bucket with prefix (and
// see a listed key or common prefix of that form): as Allows for reading,
// except that ReadObjects grants never allow listing.
func (s Session) AllowsList(bucket, prefix string) bool {
	if hasDotSegment(prefix) {
		return false
	}
	for _, g := range s.Grants {
		if g.Bucket == bucket && g.Prefix != "" && (g.Access == Read || g.Access == ReadWrite) &&
			(strings.HasPrefix(prefix, g.Prefix) || prefix+"/" == g.Prefix) {
			return true
		}
	}
	return false
}

// validate checks a session handed to a minter: at least one grant, all
// valid.
func (s Session) validate() error {
	if len(s.Grants) == 0 {
		return floe.E(floe.Invalid, "credential", "a credential needs at least one grant")
	}
	if len(s.Notice) > MaxNoticeLength || hasControl(s.Notice) {
		return floe.E(floe.Invalid, "credential", "a credential's notice is one line of at most %d bytes", MaxNoticeLength)
	}
	for _, g := range s.Grants {
		if (g.Access == Notice) != (s.Notice != "") {
			return floe.E(floe.Invalid, "credential", "a notice credential has a notice and only notice grants")
		}
	}
	for _, g := range s.Grants {
		if err := g.Validate(); err != nil {
			return err
		}
	}
	return s.validateFiles()
}

// Credentials are what a client receives.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	Expires         time.Time
}

// Minter mints credentials for a session. The minter fills in the session's
// ID, AccessKeyID and Expires and returns the completed session; ttl is
// clamped with ClampTTL.
type Minter interface {
	Mint(ctx context.Context, s Session, ttl time.Duration) (Credentials, Session, error)
}

// Credential lifetimes.
const (
	// MinTTL is the shortest lifetime of a credential (STS's minimum).
	MinTTL = 15 * time.Minute
	// MaxTTL is the longest lifetime of a credential (STS's maximum).
	MaxTTL = 12 * time.Hour
	// DefaultTTL is the lifetime of a credential minted with ttl 0.
	DefaultTTL = time.Hour
)

// ClampTTL returns the lifetime a minter gives a credential asked for with
// ttl: DefaultTTL for ttl <= 0, else ttl clamped to [MinTTL, MaxTTL].
func ClampTTL(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return DefaultTTL
	}
	return min(max(ttl, MinTTL), MaxTTL)
}

// Errors of Resolve, which wraps them; match them with errors.Is. Each is a
// *floe.Error of kind Unauthenticated, whose message is safe to show.
var (
	// ErrExpired means the credential is authentic but has expired (S3
	// ExpiredToken).
	ErrExpired = floe.E(floe.Unauthenticated, "credential", "The provided token has expired.")
	// ErrInvalidToken means the session token is malformed, tampered with,
	// minted by another deployment or under a deleted key, or does not
	// belong to the access key id (S3 InvalidToken).
	ErrInvalidToken = floe.E(floe.Unauthenticated, "credential", "The provided token is malformed or otherwise invalid.")
	// ErrUnknownAccessKey means the access key id is not one Floe vended,
	// or came without a session token (S3 InvalidAccessKeyId).
	ErrUnknownAccessKey = floe.E(floe.Unauthenticated, "credential", "The AWS access key Id you provided does not exist in our records.")
)

// hasDotSegment reports whether the /-separated path p has a "." or ".."
// segment.
func hasDotSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// hasControl reports whether s has an ASCII control character.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
