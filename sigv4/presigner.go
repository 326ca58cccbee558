package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// S3Presigner pre-signs GET requests of many objects of one S3 endpoint
// with one credential at one time: it derives the signing key and builds
// the canonical query once, so that each URL costs one SHA-256 and one
// HMAC. Its URLs are those Presign makes for a GET of the same path with
// no header but host.
type S3Presigner struct {
	origin string // scheme://host
	host   string
	query  string // canonical query without the signature
	key    []byte
	prefix string // the string to sign up to the canonical request's hash
}

// NewS3Presigner returns a presigner for scheme://host (service s3) whose
// URLs are valid for expires (1 s to 7 days) from t.
func NewS3Presigner(scheme, host string, c Credentials, region string, t time.Time, expires time.Duration) (*S3Presigner, error) {
	switch {
	case c.AccessKeyID == "" || c.SecretAccessKey == "" || strings.Contains(c.AccessKeyID, "/"):
		return nil, fmt.Errorf("sigv4: presigner: invalid credential")
	case region == "" || strings.Contains(region, "/"):
		return nil, fmt.Errorf("sigv4: presigner: invalid region %q", region)
	case host == "" || (scheme != "http" && scheme != "https"):
		return nil, fmt.Errorf("sigv4: presigner: invalid origin %s://%s", scheme, host)
	}
	secs := int64(expires / time.Second)
	if secs < 1 || secs > maxPresignSecs {
		return nil, fmt.Errorf("sigv4: presign expiry %v out of range (1s to 7 days)", expires)
	}
	t = t.UTC()
	amzDate, date := t.Format(amzDateFormat), t.Format(scopeFormat)
	scope := scopeString(date, region, "s3")
	params := []queryParam{
		{qAlgorithm, algorithm},
		{qCredential, c.AccessKeyID + "/" + scope},
		{qDate, amzDate},
		{qExpires, strconv.FormatInt(secs, 10)},
		{qSignedHeaders, "host"},
	}
	if c.SessionToken != "" {
		params = append(params, queryParam{qSecurityToken, c.SessionToken})
	}
	return &S3Presigner{origin: scheme + "://" + host, host: host, query: canonicalQuery(params, "", false),
		key: deriveKey(c.SecretAccessKey, date, region, "s3"), prefix: algorithm + "\n" + amzDate + "\n" + scope + "\n"}, nil
}

// PresignGet returns the pre-signed URL of a GET of path (not escaped,
// starting with "/", e.g. "/bucket/key" for path-style addressing).
func (p *S3Presigner) PresignGet(path string) string {
	uri := uriEncode(path, true)
	buf := make([]byte, 0, 64+len(uri)+len(p.query)+len(p.host))
	buf = append(buf, "GET\n"...)
	buf = append(buf, uri...)
	buf = append(buf, '\n')
	buf = append(buf, p.query...)
	buf = append(buf, "\nhost:"...)
	buf = append(buf, p.host...)
	buf = append(buf, "\n\nhost\n"+UnsignedPayload...)
	sum := sha256.Sum256(buf)
	var hexSum [64]byte
	hex.Encode(hexSum[:], sum[:])
	m := hmac.New(sha256.New, p.key)
	m.Write([]byte(p.prefix))
	m.Write(hexSum[:])
	var sig [64]byte
	hex.Encode(sig[:], m.Sum(nil))
	var b strings.Builder
	b.Grow(len(p.origin) + len(uri) + len(p.query) + 100)
	b.WriteString(p.origin)
	b.WriteString(uri)
	b.WriteByte('?')
	b.WriteString(p.query)
	b.WriteString("&" + qSignature + "=")
	b.Write(sig[:])
	return b.String()
}
