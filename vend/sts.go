package vend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/google/uuid"

	"github.com/floe-lake/floe"
)

// MaxPolicyLen is the longest session policy STS accepts, in characters.
const MaxPolicyLen = 2048

// STSOptions configures an STS minter.
type STSOptions struct {
	// RoleARN is the role to assume (required). Its partition (aws,
	// aws-cn, aws-us-gov) is used in the session policy's ARNs. An
	// S3-compatible STS such as MinIO's ignores it but it must be set.
	RoleARN string
	// ExternalID is sent with AssumeRole if not empty.
	ExternalID string
	// Region is the STS region; "" means the default chain's, or us-east-1.
	Region string
	// Endpoint is a custom STS endpoint URL (an S3-compatible store, tests);
	// "" means AWS's.
	Endpoint string
	// Credentials are the base credentials that assume the role; nil means
	// the AWS default chain (environment, shared config, instance role...).
	Credentials aws.CredentialsProvider
	// HTTPClient sends the STS requests; nil means the SDK's default
	// (which honours AWS_CA_BUNDLE).
	HTTPClient *http.Client
	// MaxAttempts bounds the attempts of one AssumeRole call, retries of
	// throttled or failed requests included; 0 means the SDK's default (3).
	MaxAttempts int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// STS mints credentials from AWS STS AssumeRole with an inline session
// policy that allows only the session's grants (SessionPolicy). The
// credentials are the intersection of the role's permissions and that
// policy. It is safe for concurrent use.
type STS struct {
	client     *sts.Client
	roleARN    string
	externalID string
	partition  string
	now        func() time.Time
	log        *slog.Logger
	// untagged is set once STS refused session tags (the role's trust
	// policy lacks sts:TagSession): sessions are minted without them.
	untagged atomic.Bool
}

// NewSTS returns an STS minter. With o.Credentials nil it loads the AWS
// default configuration (which does not call AWS).
func NewSTS(ctx context.Context, o STSOptions) (*STS, error) {
	if o.RoleARN == "" {
		return nil, floe.E(floe.Invalid, "", "vend: STS needs a role ARN")
	}
	partition := "aws"
	if rest, ok := strings.CutPrefix(o.RoleARN, "arn:"); ok {
		p, _, _ := strings.Cut(rest, ":")
		if p == "" || strings.Trim(p, "abcdefghijklmnopqrstuvwxyz-") != "" {
			return nil, floe.E(floe.Invalid, "", "vend: role ARN %q has no valid partition", o.RoleARN)
		}
		partition = p
	}
	var cfg aws.Config
	if o.Credentials == nil {
		var opts []func(*config.LoadOptions) error
		if o.Region != "" {
			opts = append(opts, config.WithRegion(o.Region))
		}
		var err error
		if cfg, err = config.LoadDefaultConfig(ctx, opts...); err != nil {
			return nil, fmt.Errorf("vend: load AWS configuration: %w", err)
		}
	} else {
		creds := o.Credentials
		if _, ok := creds.(*aws.CredentialsCache); !ok {
			creds = aws.NewCredentialsCache(creds)
		}
		cfg = aws.Config{Region: o.Region, Credentials: creds}
	}
	if o.HTTPClient != nil {
		// Set after loading: the default chain refuses a plain *http.Client
		// when AWS_CA_BUNDLE is set.
		cfg.HTTPClient = o.HTTPClient
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := sts.NewFromConfig(cfg, func(so *sts.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		if o.MaxAttempts > 0 {
			so.RetryMaxAttempts = o.MaxAttempts
		}
	})
	s := &STS{client: client, roleARN: o.RoleARN, externalID: o.ExternalID, partition: partition, now: o.Now, log: o.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Mint assumes the role for sess with the session policy of its grants, for
// ClampTTL(ttl) (lowered to one hour, and retried once, if STS refuses a
// longer session: the role's maximum session duration defaults to one hour
// and role chaining caps it there). The session name is "floe-" and the
// principal's name; the session is tagged with the principal, token id and
// table (TagPrincipal, TagTokenID, TagTable) so that RevokeSessionsPolicy
// can deny it; if STS refuses the tags (no sts:TagSession in the role's
// trust policy), Mint logs it once and mints untagged sessions from then
// on. It fills in sess.ID (random), sess.AccessKeyID and sess.Expires from
// the STS answer.
//
// Errors: floe.Invalid for invalid grants or a policy too large;
// floe.Unavailable when STS cannot be reached, fails or throttles;
// floe.Internal when STS refuses the request (such as AccessDenied: a
// misconfigured role or trust policy). All wrap the SDK's error.
func (s *STS) Mint(ctx context.Context, sess Session, ttl time.Duration) (Credentials, Session, error) {
	if err := sess.validate(); err != nil {
		return Credentials{}, Session{}, err
	}
	if sess.Notice != "" {
		return Credentials{}, Session{}, floe.E(floe.Invalid, "credential", "notice credentials are understood only by Floe's embedded S3 endpoint")
	}
	policy, err := sessionPolicy(s.partition, sess.Grants, sess.Files...)
	if err != nil {
		return Credentials{}, Session{}, err
	}
	if policy, err = withNetworkDeny(policy, sess.AllowedCIDRs); err != nil {
		return Credentials{}, Session{}, err
	}
	ttl = ClampTTL(ttl)
	in := &sts.AssumeRoleInput{
		RoleArn:         aws.String(s.roleARN),
		RoleSessionName: aws.String(roleSessionName(sess.Principal)),
		DurationSeconds: aws.Int32(int32(ttl / time.Second)),
		Policy:          aws.String(policy),
	}
	if s.externalID != "" {
		in.ExternalId = aws.String(s.externalID)
	}
	if !s.untagged.Load() {
		in.Tags = sessionTags(sess)
	}
	out, err := s.client.AssumeRole(ctx, in)
	if err != nil && in.Tags != nil && tagSessionDenied(err) {
		if !s.untagged.Swap(true) {
			s.log.WarnContext(ctx, "vend: STS refused session tags (add sts:TagSession to the role's trust policy); "+
				"minting untagged sessions, which per-principal and per-token revocation policies cannot match", "err", err)
		}
		in.Tags = nil
		out, err = s.client.AssumeRole(ctx, in)
	}
	if err != nil && ttl > time.Hour && durationTooLong(err) {
		ttl = time.Hour
		in.DurationSeconds = aws.Int32(int32(ttl / time.Second))
		out, err = s.client.AssumeRole(ctx, in)
	}
	if err != nil {
		return Credentials{}, Session{}, stsError(err)
	}
	c := out.Credentials
	if c == nil || c.AccessKeyId == nil || c.SecretAccessKey == nil || c.SessionToken == nil {
		return Credentials{}, Session{}, floe.Wrap(floe.Unavailable, errors.New("vend: STS AssumeRole answered without credentials"),
			"cannot vend credentials: STS answered without credentials")
	}
	exp := s.now().Add(ttl)
	if c.Expiration != nil {
		exp = *c.Expiration
	}
	sess.ID = uuid.NewString()
	sess.AccessKeyID = *c.AccessKeyId
	sess.Expires = exp.UTC()
	sess.Grants = slices.Clone(sess.Grants)
	return Credentials{AccessKeyID: *c.AccessKeyId, SecretAccessKey: *c.SecretAccessKey, SessionToken: *c.SessionToken, Expires: sess.Expires}, sess, nil
}

// roleSessionName returns "floe-" and the principal's name with characters
// STS does not allow in a session name replaced by "_", at most 64
// characters.
func roleSessionName(principal string) string {
	name := "floe"
	if principal != "" {
		name += "-" + strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("_+=,.@-", r):
				return r
			}
			return '_'
		}, principal)
	}
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

// durationTooLong reports whether STS refused the requested session
// duration.
func durationTooLong(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "DurationSeconds")
}

// stsError classifies an AssumeRole failure.
func stsError(err error) error {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return floe.Wrap(floe.Unavailable, err, "cannot vend credentials: STS is unavailable")
	}
	code := ae.ErrorCode()
	var status interface{ HTTPStatusCode() int }
	switch {
	case code == "PackedPolicyTooLarge":
		return floe.Wrap(floe.Invalid, err, "cannot vend credentials: the session policy is too large for STS")
	case ae.ErrorFault() == smithy.FaultServer, errors.As(err, &status) && status.HTTPStatusCode() >= 500,
		strings.Contains(code, "Throttl"), code == "RequestLimitExceeded":
		return floe.Wrap(floe.Unavailable, err, "cannot vend credentials: STS is unavailable")
	}
	return floe.Wrap(floe.Internal, err, "cannot vend credentials: STS refused AssumeRole (%s)", code)
}

// IAM policy actions of each access level.
var (
	readActions  = []string{"s3:GetObject", "s3:GetObjectVersion"}
	writeActions = []string{"s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"}
)

// iamEscaper escapes the characters IAM treats as wildcards or policy
// variables, so that a key prefix matches only itself.
var iamEscaper = strings.NewReplacer("$", "${$}", "*", "${*}", "?", "${?}")

type policyDocument struct {
	Version   string            `json:"Version"`
	Statement []policyStatement `json:"Statement"`
}

type policyStatement struct {
	Sid       string                         `json:"Sid"`
	Effect    string                         `json:"Effect"`
	Action    []string                       `json:"Action"`
	Resource  []string                       `json:"Resource"`
	Condition map[string]map[string][]string `json:"Condition,omitempty"`
}

// SessionPolicy returns the inline session policy (compact JSON) that
// allows exactly grants in the aws partition: s3:GetObject and
// s3:GetObjectVersion on every granted prefix; for ReadWrite grants also
// s3:PutObject, s3:DeleteObject, s3:AbortMultipartUpload and
// s3:ListMultipartUploadParts; s3:ListBucket on each bucket for list
// prefixes [prefix, prefix*]; and s3:GetBucketLocation on each bucket.
// IAM wildcards and variables in prefixes ("*", "?", "$") are escaped. It
// fails with floe.Invalid for invalid grants or a policy longer than
// MaxPolicyLen characters.
func SessionPolicy(grants []Grant) (string, error) {
	return sessionPolicy("aws", grants)
}

func sessionPolicy(partition string, grants []Grant, files ...string) (string, error) {
	if len(grants) == 0 {
		return "", floe.E(floe.Invalid, "credential", "a credential needs at least one grant")
	}
	arn := "arn:" + partition + ":s3:::"
	var buckets []string
	var read, write []string
	prefixes := map[string][]string{}
	for _, g := range grants {
		if err := g.Validate(); err != nil {
			return "", err
		}
		if g.Access == ReadListed {
			return "", floe.E(floe.Unsupported, "credential", "a read-listed credential (a derived snapshot's files) "+
				"cannot be expressed as an STS session policy; it needs Floe's own S3 endpoint")
		}
		if !slices.Contains(buckets, g.Bucket) {
			buckets = append(buckets, g.Bucket)
		}
		if g.Access == ReadFiles {
			// Exactly the named objects: one ARN each, no wildcard, no
			// listing.
			for _, k := range files {
				if strings.HasPrefix(k, g.Prefix) {
					read = appendNew(read, arn+g.Bucket+"/"+iamEscaper.Replace(k))
				}
			}
			continue
		}
		p := iamEscaper.Replace(g.Prefix)
		obj := arn + g.Bucket + "/" + p + "*"
		read = appendNew(read, obj)
		if g.Access == ReadWrite {
			write = appendNew(write, obj)
		}
		if g.Access != ReadObjects { // read by key only: no listing
			prefixes[g.Bucket] = appendNew(appendNew(prefixes[g.Bucket], p), p+"*")
		}
	}
	doc := policyDocument{Version: "2012-10-17"}
	doc.Statement = append(doc.Statement, policyStatement{Sid: "Read", Effect: "Allow", Action: readActions, Resource: read})
	if len(write) > 0 {
		doc.Statement = append(doc.Statement, policyStatement{Sid: "Write", Effect: "Allow", Action: writeActions, Resource: write})
	}
	bucketARNs := make([]string, len(buckets))
	for i, b := range buckets {
		bucketARNs[i] = arn + b
		if len(prefixes[b]) == 0 {
			continue
		}
		doc.Statement = append(doc.Statement, policyStatement{
			Sid: fmt.Sprintf("List%d", i), Effect: "Allow", Action: []string{"s3:ListBucket"}, Resource: []string{arn + b},
			Condition: map[string]map[string][]string{"StringLike": {"s3:prefix": prefixes[b]}},
		})
	}
	doc.Statement = append(doc.Statement, policyStatement{Sid: "Location", Effect: "Allow", Action: []string{"s3:GetBucketLocation"}, Resource: bucketARNs})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return "", fmt.Errorf("vend: encode session policy: %w", err)
	}
	policy := strings.TrimSuffix(buf.String(), "\n")
	if n := len([]rune(policy)); n > MaxPolicyLen && len(files) > 0 {
		return "", floe.E(floe.Invalid, "credential", "a credential for exactly %d files needs a session policy of %d characters, "+
			"more than the %d STS allows: per-file credentials for more files need Floe's embedded S3 endpoint or remote signing", len(files), n, MaxPolicyLen)
	}
	if n := len([]rune(policy)); n > MaxPolicyLen {
		return "", floe.E(floe.Invalid, "credential", "the session policy of the credential's grants has %d characters, more than the %d STS allows", n, MaxPolicyLen)
	}
	return policy, nil
}

// appendNew appends s to list unless it is there already.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
