package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// DefaultSigningName is the SigV4 service name of Auth kind "sigv4" when
// Auth.SigningName is empty: AWS Glue's Iceberg REST endpoint.
const DefaultSigningName = "glue"

// regionRE is the shape of an AWS region name (us-east-1, cn-north-1,
// us-gov-west-1, eu-isoe-west-1...).
var regionRE = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)

// signingNameRE is the shape of a SigV4 service name.
var signingNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// sigv4Auth signs requests with AWS Signature Version 4. Credentials come
// from Auth.AWSCredentials or the AWS default chain, loaded on first use
// (with the request's context), optionally under an AssumeRole, and are
// cached (and refreshed before expiry) by an aws.CredentialsCache.
type sigv4Auth struct {
	name, region, service, roleARN, externalID string
	provided                                   aws.CredentialsProvider
	signer                                     *v4.Signer

	mu    sync.Mutex
	creds *aws.CredentialsCache // nil until loaded
}

// newSigV4 validates the sigv4 fields of o.Auth.
func newSigV4(o Options) (*sigv4Auth, error) {
	a := o.Auth
	if !regionRE.MatchString(a.Region) {
		return nil, fmt.Errorf("foreign catalog %s: sigv4 auth needs a region such as us-east-1 (got %q)", o.Name, a.Region)
	}
	service := a.SigningName
	if service == "" {
		service = DefaultSigningName
	}
	if !signingNameRE.MatchString(service) {
		return nil, fmt.Errorf("foreign catalog %s: sigv4 signing name %q is not a service name", o.Name, service)
	}
	if a.RoleARN != "" && !strings.HasPrefix(a.RoleARN, "arn:") {
		return nil, fmt.Errorf("foreign catalog %s: sigv4 role ARN must be an ARN such as arn:aws:iam::<account>:role/<name>", o.Name)
	}
	if a.ExternalID != "" && a.RoleARN == "" {
		return nil, fmt.Errorf("foreign catalog %s: sigv4 external id needs a role ARN", o.Name)
	}
	return &sigv4Auth{name: o.Name, region: a.Region, service: service, roleARN: a.RoleARN, externalID: a.ExternalID,
		provided: a.AWSCredentials, signer: v4.NewSigner()}, nil
}

// credentials returns the credentials cache, building it on first use.
func (s *sigv4Auth) credentials(ctx context.Context) (*aws.CredentialsCache, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.creds != nil {
		return s.creds, nil
	}
	cfg := aws.Config{Region: s.region, Credentials: s.provided}
	if s.provided == nil {
		var err error
		if cfg, err = config.LoadDefaultConfig(ctx, config.WithRegion(s.region)); err != nil {
			return nil, fmt.Errorf("load the AWS configuration: %w", err)
		}
	}
	base := cfg.Credentials
	if s.roleARN != "" {
		ext := s.externalID
		base = stscreds.NewAssumeRoleProvider(sts.NewFromConfig(cfg), s.roleARN, func(o *stscreds.AssumeRoleOptions) {
			o.RoleSessionName = "floe-federation-" + s.name
			if ext != "" {
				o.ExternalID = aws.String(ext)
			}
		})
	}
	if base == nil {
		return nil, errors.New("no AWS credentials provider")
	}
	if c, ok := base.(*aws.CredentialsCache); ok {
		s.creds = c
	} else {
		s.creds = aws.NewCredentialsCache(base)
	}
	return s.creds, nil
}

// invalidate makes the next request retrieve fresh credentials.
func (s *sigv4Auth) invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.creds != nil {
		s.creds.Invalidate()
	}
}

// describe names the signing scope in errors: never a secret.
func (s *sigv4Auth) describe() string {
	d := fmt.Sprintf("signing region %s, service %s", s.region, s.service)
	if s.roleARN != "" {
		d += ", role " + s.roleARN
	}
	return d
}

// sign signs req, whose body is body (nil: none), with SigV4. The payload
// hash is the hex SHA-256 of body, also sent as X-Amz-Content-Sha256.
func (c *Client) sign(ctx context.Context, req *http.Request, body []byte) error {
	s := c.sig
	cache, err := s.credentials(ctx)
	if err != nil {
		return c.unavailable(err, "cannot load AWS credentials for SigV4 (%s)", s.describe())
	}
	creds, err := cache.Retrieve(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return c.transportError(ctx.Err())
		}
		return c.unavailable(fmt.Errorf("retrieve AWS credentials: %w", err), "no AWS credentials for SigV4 (%s)", s.describe())
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if err := s.signer.SignHTTP(ctx, creds, req, hash, s.service, s.region, c.o.Now().UTC()); err != nil {
		return c.unavailable(fmt.Errorf("sigv4 sign: %w", err), "cannot sign the request (%s)", s.describe())
	}
	return nil
}

// expiredCredentials reports whether r is AWS refusing expired or
// unrecognised temporary credentials: worth one retry with fresh ones.
func expiredCredentials(r *response) bool {
	if r.status != http.StatusForbidden && r.status != http.StatusUnauthorized && r.status != http.StatusBadRequest {
		return false
	}
	code, msg := awsError(r)
	return code == "ExpiredTokenException" || code == "ExpiredToken" ||
		strings.Contains(msg, "security token included in the request is expired")
}

// sigv4Refused is the error of a remote that refuses Floe's SigV4
// signature: it names the signing region and service (what an operator
// gets wrong) and the remote's own words.
func (c *Client) sigv4Refused(cause error, r *response) error {
	code, msg := awsError(r)
	if m := remoteMessage(r.body); m != "" {
		msg = m
	}
	why := ""
	switch {
	case code != "" && msg != "":
		why = ": " + code + ": " + msg
	case msg != "":
		why = ": " + msg
	case code != "":
		why = ": " + code
	}
	return c.refused(cause, "foreign catalog %s refused Floe's SigV4-signed request (%s; HTTP %d)%s",
		c.o.Name, c.sig.describe(), r.status, why)
}

// awsError reads an AWS error answer: the error type from the
// x-amzn-ErrorType header or the body's __type/code, and the body's
// message/Message, cleaned and bounded.
func awsError(r *response) (code, msg string) {
	code = r.header.Get("X-Amzn-Errortype")
	var b struct {
		Type     string `json:"__type"`
		Code     string `json:"code"`
		Message  string `json:"message"`
		Message2 string `json:"Message"`
	}
	if json.Unmarshal(r.body, &b) == nil {
		if code == "" {
			code = b.Type
		}
		if code == "" {
			code = b.Code
		}
		msg = b.Message
		if msg == "" {
			msg = b.Message2
		}
	}
	// "InvalidSignatureException:http://internal.amazon.com/..." and
	// "com.amazonaws.glue#AccessDeniedException" carry a namespace.
	code, _, _ = strings.Cut(code, ":")
	if i := strings.LastIndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	return clean(code, 64), clean(msg, maxMessage)
}
