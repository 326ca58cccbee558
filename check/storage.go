package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// MaxCredentialLifetime is the longest vended-credential lifetime that
// passes (S4).
const MaxCredentialLifetime = 12 * time.Hour

// vended is the S3 configuration a loadTable answer hands out for a table.
type vended struct {
	keyID, secret, session string
	endpoint, region       string
	pathStyle              bool
	expires                time.Time // zero: no expiry given
	source                 string    // "storage-credentials" or "config"
}

// credentialsOf picks the S3 credentials of a loadTable answer for the
// table's location: the storage-credentials entry with the longest prefix
// of it, else the config's s3.* keys. ok is false when there are none.
func credentialsOf(t *tableLoad) (v vended, ok bool) {
	cfg := map[string]string{}
	for k, val := range t.result.Config {
		cfg[k] = val
	}
	v.source = "config"
	best := -1
	for _, sc := range t.result.StorageCredentials {
		if strings.HasPrefix(t.metadata.Location, sc.Prefix) && len(sc.Prefix) > best && sc.Config["s3.access-key-id"] != "" {
			best = len(sc.Prefix)
			for k, val := range sc.Config {
				cfg[k] = val
			}
			v.source = "storage-credentials"
		}
	}
	v.keyID, v.secret, v.session = cfg["s3.access-key-id"], cfg["s3.secret-access-key"], cfg["s3.session-token"]
	v.endpoint = cfg["s3.endpoint"]
	v.region = orDefault(cfg["s3.region"], orDefault(cfg["client.region"], "us-east-1"))
	v.pathStyle = cfg["s3.path-style-access"] == "true"
	for k, val := range cfg {
		lk := strings.ToLower(k)
		if strings.Contains(lk, "expires-at") || strings.Contains(lk, "expiration") {
			if ms, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64); err == nil {
				v.expires = time.UnixMilli(ms)
			} else if ts, err := time.Parse(time.RFC3339, strings.TrimSpace(val)); err == nil {
				v.expires = ts
			}
		}
	}
	return v, v.keyID != "" && v.secret != ""
}

// s3Client is an S3 client with the vended credentials v.
func (r *run) s3Client(v vended) *s3.Client {
	o := s3.Options{
		Region:       v.region,
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(v.keyID, v.secret, v.session)),
		UsePathStyle: v.pathStyle,
		HTTPClient:   r.o.S3HTTPClient,
	}
	if v.endpoint != "" {
		o.BaseEndpoint = aws.String(v.endpoint)
	}
	return s3.New(o)
}

// splitS3 reads s3://bucket/key (also s3a://, s3n://).
func splitS3(loc string) (bucket, key string, ok bool) {
	u, err := url.Parse(loc)
	if err != nil || (u.Scheme != "s3" && u.Scheme != "s3a" && u.Scheme != "s3n") || u.Host == "" {
		return "", "", false
	}
	return u.Host, strings.TrimPrefix(u.Path, "/"), true
}

// s3Status is the HTTP status of an S3 call's error (200 for none, 0 when
// no answer arrived).
func s3Status(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func s3Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// firstVended is the first sampled table that came with credentials.
func (r *run) firstVended() (*tableLoad, vended, bool) {
	for _, t := range r.tables {
		if v, ok := credentialsOf(t); ok {
			return t, v, true
		}
	}
	return nil, vended{}, false
}

// checkVending (S4): loadTable without X-Iceberg-Access-Delegation
// answers storage credentials.
func (r *run) checkVending(context.Context) {
	if len(r.tables) == 0 {
		r.add("S4", "s4.vended-credentials", Skip, "no table loaded")
		return
	}
	t, v, ok := r.firstVended()
	if !ok {
		r.add("S4", "s4.vended-credentials", Fail, "loadTable of %s without X-Iceberg-Access-Delegation answered no storage-credentials and no s3.* credentials in config", r.tables[0])
		return
	}
	r.add("S4", "s4.vended-credentials", Pass, "loadTable of %s without the delegation header vended S3 credentials (%s, endpoint %s)", t, v.source, orDefault(v.endpoint, "AWS default"))
}

// checkCredentialLifetime (S4): vended credentials are temporary (a
// session token) and expire within MaxCredentialLifetime.
func (r *run) checkCredentialLifetime(context.Context) {
	t, v, ok := r.firstVended()
	if !ok {
		r.add("S4", "s4.credential-lifetime", Skip, "no vended credentials")
		return
	}
	left := v.expires.Sub(r.o.Now())
	switch {
	case v.session == "":
		r.add("S4", "s4.credential-lifetime", Fail, "%s vends a long-lived key (no s3.session-token)", t)
	case v.expires.IsZero():
		r.add("S4", "s4.credential-lifetime", Warn, "%s vends a session without an expiry (no s3.session-token-expires-at-ms)", t)
	case left > MaxCredentialLifetime:
		r.add("S4", "s4.credential-lifetime", Fail, "%s vends credentials valid %s more (> %s)", t, left.Round(time.Second), MaxCredentialLifetime)
	default:
		r.add("S4", "s4.credential-lifetime", Pass, "session credentials expiring in %s (≤ %s)", left.Round(time.Second), MaxCredentialLifetime)
	}
}

// getObject reads the object at loc with v; it returns the status, the
// server-side encryption header and the body's first bytes.
func (r *run) getObject(ctx context.Context, v vended, loc string) (int, string, []byte, error) {
	b, k, ok := splitS3(loc)
	if !ok {
		return 0, "", nil, fmt.Errorf("not an s3:// location: %s", loc)
	}
	out, err := r.s3Client(v).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(k)})
	if err != nil {
		return s3Status(err), "", nil, err
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, maxBody))
	if err != nil {
		return http.StatusOK, string(out.ServerSideEncryption), nil, err
	}
	return http.StatusOK, string(out.ServerSideEncryption), body, nil
}

// checkScoped (S4, and S1's readability): with a table's credentials its
// metadata file reads, and another table's metadata file is refused.
func (r *run) checkScoped(ctx context.Context) {
	t, v, ok := r.firstVended()
	if !ok {
		r.add("S1", "s1.metadata-readable", Skip, "no vended credentials to read with")
		r.add("S4", "s4.scoped", Skip, "no vended credentials")
		return
	}
	st, _, body, err := r.getObject(ctx, v, t.result.MetadataLocation)
	if err != nil || !jsonHas(body, "format-version") {
		r.add("S1", "s1.metadata-readable", Fail, "reading %s with the vended credentials: HTTP %d %s", t.result.MetadataLocation, st, s3Code(err))
	} else {
		r.add("S1", "s1.metadata-readable", Pass, "the current metadata file of %s reads with the vended credentials", t)
	}
	var other *tableLoad
	for _, o := range r.tables {
		if o != t && o.result.MetadataLocation != "" && !strings.HasPrefix(o.result.MetadataLocation, strings.TrimSuffix(t.metadata.Location, "/")+"/") {
			other = o
			break
		}
	}
	if other == nil {
		r.add("S4", "s4.scoped", Skip, "only one table sampled: no other table's prefix to try")
		return
	}
	st, _, _, err = r.getObject(ctx, v, other.result.MetadataLocation)
	switch st {
	case http.StatusForbidden:
		r.add("S4", "s4.scoped", Pass, "%s's credentials are refused (403 %s) on %s's metadata file", t, s3Code(err), other)
	case http.StatusOK:
		r.add("S4", "s4.scoped", Fail, "%s's credentials read %s's metadata file %s", t, other, other.result.MetadataLocation)
	default:
		r.add("S4", "s4.scoped", Warn, "reading %s's metadata with %s's credentials: HTTP %d %s (expected 403)", other, t, st, s3Code(err))
	}
}

// readScope is the OAuth2 scope of a read-only token on Floe.
const readScope = "catalog:read"

// checkReadOnly (S4): credentials vended to a read-only identity refuse a
// PUT under the table's prefix. The read-only identity is the federation
// identity when given, else (on Floe) the checking identity with scope
// catalog:read.
func (r *run) checkReadOnly(ctx context.Context) {
	if len(r.tables) == 0 {
		r.add("S4", "s4.read-only", Skip, "no table loaded")
		return
	}
	if _, _, ok := r.firstVended(); !ok {
		r.add("S4", "s4.read-only", Skip, "no vended credentials")
		return
	}
	tok, who := "", ""
	switch {
	case r.o.FederationToken != "":
		tok, who = r.o.FederationToken, "the federation identity"
	case r.o.FederationCredential != "":
		ta, a := r.clientToken(ctx, r.o.FederationCredential, "catalog")
		if a.status != http.StatusOK {
			r.add("S4", "s4.read-only", Skip, "the federation credential got no token: %s", a.describe())
			return
		}
		tok, who = ta.AccessToken, "the federation identity"
	case r.floe && r.o.Credential != "":
		ta, a := r.clientToken(ctx, r.o.Credential, readScope)
		if a.status != http.StatusOK {
			r.add("S4", "s4.read-only", Skip, "no %s token: %s", readScope, a.describe())
			return
		}
		tok, who = ta.AccessToken, "a "+readScope+" token"
	default:
		r.add("S4", "s4.read-only", Skip, "no read-only identity: give --federation-credential to check that read tokens get read-only credentials")
		return
	}
	t0 := r.tables[0]
	t, a := r.loadTable(ctx, tok, t0.ns, t0.name, nil)
	if t.loadErr != "" {
		r.add("S4", "s4.read-only", Skip, "%s cannot load %s: %s", who, t0, a.describe())
		return
	}
	v, ok := credentialsOf(t)
	if !ok {
		r.add("S4", "s4.read-only", Skip, "%s got no credentials for %s", who, t0)
		return
	}
	b, k, ok := splitS3(strings.TrimSuffix(t.metadata.Location, "/") + "/metadata/_floe_check_write_probe")
	if !ok {
		r.add("S4", "s4.read-only", Skip, "table location %s is not s3://", t.metadata.Location)
		return
	}
	cl := r.s3Client(v)
	_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader("floe check")})
	switch st := s3Status(err); st {
	case http.StatusForbidden:
		r.add("S4", "s4.read-only", Pass, "credentials vended to %s refuse a PUT under %s (403 %s)", who, t0, s3Code(err))
	case http.StatusOK:
		_, _ = cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(k)})
		r.add("S4", "s4.read-only", Fail, "credentials vended to %s wrote s3://%s/%s", who, b, k)
	default:
		r.add("S4", "s4.read-only", Warn, "PUT with credentials vended to %s: HTTP %d %s (expected 403)", who, st, s3Code(err))
	}
}

// checkEncryption (S6): the table's metadata file is stored with
// server-side encryption (the x-amz-server-side-encryption header).
func (r *run) checkEncryption(ctx context.Context) {
	t, v, ok := r.firstVended()
	if !ok {
		r.add("S6", "s6.encryption", Skip, "no vended credentials to read an object with")
		return
	}
	st, sse, _, err := r.getObject(ctx, v, t.result.MetadataLocation)
	switch {
	case err != nil:
		r.add("S6", "s6.encryption", Skip, "reading %s: HTTP %d %s", t.result.MetadataLocation, st, s3Code(err))
	case sse != "":
		r.add("S6", "s6.encryption", Pass, "%s is stored encrypted (x-amz-server-side-encryption: %s)", t.result.MetadataLocation, sse)
	case r.floe:
		r.add("S6", "s6.encryption", Fail, "%s is stored unencrypted (no x-amz-server-side-encryption)", t.result.MetadataLocation)
	default:
		r.add("S6", "s6.encryption", Warn, "the store reports no server-side encryption for %s", t.result.MetadataLocation)
	}
}
