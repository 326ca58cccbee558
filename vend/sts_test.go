package vend_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/vend"
)

// fakeSTS is an STS endpoint that checks requests are signed AssumeRole
// calls and answers with canned XML.
type fakeSTS struct {
	t   *testing.T
	srv *httptest.Server
	// answer returns the status and XML body for a request's form.
	answer func(form url.Values) (int, string)

	mu    sync.Mutex
	forms []url.Values
}

func newFakeSTS(t *testing.T, answer func(form url.Values) (int, string)) *fakeSTS {
	f := &fakeSTS{t: t, answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSTS) serve(w http.ResponseWriter, r *http.Request) {
	fail := func(format string, args ...any) {
		f.t.Errorf("fake STS: "+format, args...)
		http.Error(w, "bad request", http.StatusBadRequest)
	}
	auth := r.Header.Get("Authorization")
	if r.Method != http.MethodPost || !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDFLOETEST/") ||
		!strings.Contains(auth, "/us-east-1/sts/aws4_request") || !strings.Contains(auth, "SignedHeaders=") || !strings.Contains(auth, "Signature=") {
		fail("%s with Authorization %q, want a SigV4-signed POST for sts", r.Method, auth)
		return
	}
	if r.Header.Get("X-Amz-Date") == "" {
		fail("no X-Amz-Date")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		fail("parse form: %v", err)
		return
	}
	form := r.PostForm
	if form.Get("Action") != "AssumeRole" || form.Get("Version") != "2011-06-15" {
		fail("Action %q Version %q", form.Get("Action"), form.Get("Version"))
		return
	}
	f.mu.Lock()
	f.forms = append(f.forms, form)
	f.mu.Unlock()
	status, body := f.answer(form)
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}

func (f *fakeSTS) requests() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]url.Values(nil), f.forms...)
}

const assumeRoleOK = `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <Credentials>
      <AccessKeyId>ASIAFLOEVENDED000001</AccessKeyId>
      <SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY</SecretAccessKey>
      <SessionToken>FwoGZXIvYXdzEJr-session-token</SessionToken>
      <Expiration>%s</Expiration>
    </Credentials>
    <AssumedRoleUser>
      <AssumedRoleId>AROA3XFRBF535PLBIFPI4:%s</AssumedRoleId>
      <Arn>arn:aws:sts::123456789012:assumed-role/floe-vend/%s</Arn>
    </AssumedRoleUser>
    <PackedPolicySize>12</PackedPolicySize>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ResponseMetadata>
</AssumeRoleResponse>`

func stsError(code, msg string) string {
	return fmt.Sprintf(`<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error>
  <RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId>
</ErrorResponse>`, code, msg)
}

// okAnswer answers with credentials expiring DurationSeconds after t0.
func okAnswer(form url.Values) (int, string) {
	var secs int
	fmt.Sscan(form.Get("DurationSeconds"), &secs)
	exp := t0.Add(time.Duration(secs) * time.Second).Format(time.RFC3339)
	name := form.Get("RoleSessionName")
	return http.StatusOK, fmt.Sprintf(assumeRoleOK, exp, name, name)
}

var testCreds = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: "AKIDFLOETEST", SecretAccessKey: "base-secret", Source: "test"}, nil
})

func newSTS(t *testing.T, f *fakeSTS, edit func(o *vend.STSOptions)) *vend.STS {
	t.Helper()
	o := vend.STSOptions{
		RoleARN: "arn:aws:iam::123456789012:role/floe-vend", Region: "us-east-1", Endpoint: f.srv.URL,
		Credentials: testCreds, HTTPClient: f.srv.Client(), MaxAttempts: 1, Now: fakeclock.New(t0).Now,
	}
	if edit != nil {
		edit(&o)
	}
	s, err := vend.NewSTS(t.Context(), o)
	if err != nil {
		t.Fatalf("NewSTS: %v", err)
	}
	return s
}

func TestSTSMint(t *testing.T) {
	f := newFakeSTS(t, okAnswer)
	m := newSTS(t, f, func(o *vend.STSOptions) { o.ExternalID = "ext-42" })
	s := session()
	s.Principal = "ann smith/ops"
	c, got := mint(t, m, s, 0)
	if c.AccessKeyID != "ASIAFLOEVENDED000001" || c.SecretAccessKey != "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY" ||
		c.SessionToken != "FwoGZXIvYXdzEJr-session-token" || !c.Expires.Equal(t0.Add(time.Hour)) {
		t.Errorf("credentials = %+v", c)
	}
	if got.ID == "" || got.AccessKeyID != c.AccessKeyID || !got.Expires.Equal(c.Expires) || got.Principal != s.Principal ||
		got.Table != s.Table || len(got.Grants) != 1 || got.Grants[0] != s.Grants[0] {
		t.Errorf("session = %+v", got)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	form := reqs[0]
	policy, err := vend.SessionPolicy(s.Grants)
	must(t, err)
	for k, want := range map[string]string{
		"RoleArn":         "arn:aws:iam::123456789012:role/floe-vend",
		"RoleSessionName": "floe-ann_smith_ops",
		"DurationSeconds": "3600",
		"ExternalId":      "ext-42",
		"Policy":          policy,
	} {
		if got := form.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestSTSDuration(t *testing.T) {
	for _, tt := range []struct {
		name  string
		ttl   time.Duration
		max   int // the role's maximum session, seconds
		sent  []string
		lives time.Duration
	}{
		{"default", 0, 3600, []string{"3600"}, time.Hour},
		{"short", time.Minute, 3600, []string{"900"}, 15 * time.Minute},
		{"long role", 5 * time.Hour, 43200, []string{"18000"}, 5 * time.Hour},
		{"too long", 48 * time.Hour, 43200, []string{"43200"}, 12 * time.Hour},
		{"over the role's maximum", 5 * time.Hour, 3600, []string{"18000", "3600"}, time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSTS(t, func(form url.Values) (int, string) {
				var secs int
				fmt.Sscan(form.Get("DurationSeconds"), &secs)
				if secs > tt.max {
					return http.StatusBadRequest, stsError("ValidationError", "The requested DurationSeconds exceeds the MaxSessionDuration set for this role.")
				}
				return okAnswer(form)
			})
			c, _ := mint(t, newSTS(t, f, nil), session(), tt.ttl)
			var sent []string
			for _, form := range f.requests() {
				sent = append(sent, form.Get("DurationSeconds"))
			}
			if strings.Join(sent, ",") != strings.Join(tt.sent, ",") || !c.Expires.Equal(t0.Add(tt.lives)) {
				t.Errorf("sent DurationSeconds %q, expires %v; want %q, %v", sent, c.Expires, tt.sent, t0.Add(tt.lives))
			}
		})
	}
}

func TestSTSErrors(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		body   string
		kind   floe.Kind
	}{
		{"access denied", http.StatusForbidden, stsError("AccessDenied", "User is not authorized to perform: sts:AssumeRole"), floe.Internal},
		{"malformed policy", http.StatusBadRequest, stsError("MalformedPolicyDocument", "bad"), floe.Internal},
		{"packed policy too large", http.StatusBadRequest, stsError("PackedPolicyTooLarge", "too large"), floe.Invalid},
		{"throttled", http.StatusBadRequest, stsError("Throttling", "Rate exceeded"), floe.Unavailable},
		{"server error", http.StatusInternalServerError, stsError("InternalFailure", "oops"), floe.Unavailable},
		{"no credentials", http.StatusOK, `<AssumeRoleResponse><AssumeRoleResult></AssumeRoleResult></AssumeRoleResponse>`, floe.Unavailable},
		{"not XML", http.StatusOK, `{"json": true}`, floe.Unavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSTS(t, func(url.Values) (int, string) { return tt.status, tt.body })
			c, s, err := newSTS(t, f, nil).Mint(t.Context(), session(), 0)
			if floe.KindOf(err) != tt.kind || c != (vend.Credentials{}) || s.Grants != nil {
				t.Fatalf("Mint = %+v, %+v, %v (kind %v); want kind %v", c, s, err, floe.KindOf(err), tt.kind)
			}
		})
	}

	t.Run("unreachable", func(t *testing.T) {
		f := newFakeSTS(t, okAnswer)
		m := newSTS(t, f, nil)
		f.srv.Close()
		if _, _, err := m.Mint(t.Context(), session(), 0); floe.KindOf(err) != floe.Unavailable {
			t.Fatalf("Mint against a closed server: %v, want Unavailable", err)
		}
	})
	t.Run("invalid session", func(t *testing.T) {
		f := newFakeSTS(t, okAnswer)
		m := newSTS(t, f, nil)
		many := session()
		for i := range 40 {
			many.Grants = append(many.Grants, vend.Grant{Bucket: "lake", Prefix: fmt.Sprintf("ns/table-%02d-0123456789abcdef/", i), Access: vend.Read})
		}
		for _, s := range []vend.Session{{}, {Grants: []vend.Grant{{Bucket: "b", Prefix: "p", Access: vend.Read}}}, many} {
			if _, _, err := m.Mint(t.Context(), s, 0); floe.KindOf(err) != floe.Invalid {
				t.Errorf("Mint(%d grants): %v, want Invalid", len(s.Grants), err)
			}
		}
		if n := len(f.requests()); n != 0 {
			t.Errorf("%d requests for invalid sessions", n)
		}
	})
}

func TestNewSTS(t *testing.T) {
	f := newFakeSTS(t, okAnswer)
	for _, arn := range []string{"", "arn::iam::1:role/x", "arn:AWS:iam::1:role/x"} {
		if _, err := vend.NewSTS(t.Context(), vend.STSOptions{RoleARN: arn, Credentials: testCreds}); err == nil {
			t.Errorf("NewSTS(RoleARN %q) succeeded", arn)
		}
	}

	// The partition of the role is the partition of the policy's ARNs.
	m := newSTS(t, f, func(o *vend.STSOptions) { o.RoleARN = "arn:aws-cn:iam::123456789012:role/floe" })
	mint(t, m, session(), 0)
	reqs := f.requests()
	if p := reqs[len(reqs)-1].Get("Policy"); !strings.Contains(p, `"arn:aws-cn:s3:::lake"`) || strings.Contains(p, "arn:aws:") {
		t.Errorf("policy for an aws-cn role: %s", p)
	}

	// Without credentials, the default chain: here the environment. A
	// MinIO-style role ARN has no partition: "aws".
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFLOETEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/floe/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/floe/credentials")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CA_BUNDLE", "")
	m, err := vend.NewSTS(t.Context(), vend.STSOptions{RoleARN: "floe-role", Endpoint: f.srv.URL, HTTPClient: f.srv.Client(), MaxAttempts: 1})
	must(t, err)
	mint(t, m, session(), 0)
	reqs = f.requests()
	if p := reqs[len(reqs)-1].Get("Policy"); !strings.Contains(p, `"arn:aws:s3:::lake"`) {
		t.Errorf("policy for a role without partition: %s", p)
	}

	// A custom CA bundle and an HTTP client of one's own go together.
	tls := httptest.NewTLSServer(http.NotFoundHandler())
	tls.Close()
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	must(t, os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tls.Certificate().Raw}), 0o600))
	t.Setenv("AWS_CA_BUNDLE", bundle)
	m, err = vend.NewSTS(t.Context(), vend.STSOptions{RoleARN: "floe-role", Endpoint: f.srv.URL, HTTPClient: f.srv.Client(), MaxAttempts: 1})
	must(t, err)
	mint(t, m, session(), 0)
}

func TestSessionPolicy(t *testing.T) {
	for _, tt := range []struct {
		name   string
		grants []vend.Grant
		want   string
	}{
		{"read", []vend.Grant{{Bucket: "lake", Prefix: "crm/accounts-0a1b/", Access: vend.Read}},
			`{"Version":"2012-10-17","Statement":[` +
				`{"Sid":"Read","Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::lake/crm/accounts-0a1b/*"]},` +
				`{"Sid":"List0","Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::lake"],"Condition":{"StringLike":{"s3:prefix":["crm/accounts-0a1b/","crm/accounts-0a1b/*"]}}},` +
				`{"Sid":"Location","Effect":"Allow","Action":["s3:GetBucketLocation"],"Resource":["arn:aws:s3:::lake"]}]}`},
		{"read-write", []vend.Grant{{Bucket: "lake", Prefix: "crm/accounts-0a1b/", Access: vend.ReadWrite}},
			`{"Version":"2012-10-17","Statement":[` +
				`{"Sid":"Read","Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::lake/crm/accounts-0a1b/*"]},` +
				`{"Sid":"Write","Effect":"Allow","Action":["s3:PutObject","s3:DeleteObject","s3:AbortMultipartUpload","s3:ListMultipartUploadParts"],"Resource":["arn:aws:s3:::lake/crm/accounts-0a1b/*"]},` +
				`{"Sid":"List0","Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::lake"],"Condition":{"StringLike":{"s3:prefix":["crm/accounts-0a1b/","crm/accounts-0a1b/*"]}}},` +
				`{"Sid":"Location","Effect":"Allow","Action":["s3:GetBucketLocation"],"Resource":["arn:aws:s3:::lake"]}]}`},
		{"read-objects: no listing", []vend.Grant{{Bucket: "lake", Prefix: "crm/accounts-0a1b/", Access: vend.ReadObjects}},
			`{"Version":"2012-10-17","Statement":[` +
				`{"Sid":"Read","Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::lake/crm/accounts-0a1b/*"]},` +
				`{"Sid":"Location","Effect":"Allow","Action":["s3:GetBucketLocation"],"Resource":["arn:aws:s3:::lake"]}]}`},
		{"escaped", []vend.Grant{{Bucket: "lake", Prefix: "a*b?c${aws:username}<&>/", Access: vend.Read}},
			`{"Version":"2012-10-17","Statement":[` +
				`{"Sid":"Read","Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::lake/a${*}b${?}c${$}{aws:username}<&>/*"]},` +
				`{"Sid":"List0","Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::lake"],"Condition":{"StringLike":{"s3:prefix":["a${*}b${?}c${$}{aws:username}<&>/","a${*}b${?}c${$}{aws:username}<&>/*"]}}},` +
				`{"Sid":"Location","Effect":"Allow","Action":["s3:GetBucketLocation"],"Resource":["arn:aws:s3:::lake"]}]}`},
		{"two buckets", []vend.Grant{
			{Bucket: "lake", Prefix: "a/", Access: vend.Read},
			{Bucket: "other", Prefix: "b/", Access: vend.ReadWrite},
			{Bucket: "lake", Prefix: "c/", Access: vend.Read},
			{Bucket: "lake", Prefix: "a/", Access: vend.Read}, // duplicate
		},
			`{"Version":"2012-10-17","Statement":[` +
				`{"Sid":"Read","Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::lake/a/*","arn:aws:s3:::other/b/*","arn:aws:s3:::lake/c/*"]},` +
				`{"Sid":"Write","Effect":"Allow","Action":["s3:PutObject","s3:DeleteObject","s3:AbortMultipartUpload","s3:ListMultipartUploadParts"],"Resource":["arn:aws:s3:::other/b/*"]},` +
				`{"Sid":"List0","Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::lake"],"Condition":{"StringLike":{"s3:prefix":["a/","a/*","c/","c/*"]}}},` +
				`{"Sid":"List1","Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::other"],"Condition":{"StringLike":{"s3:prefix":["b/","b/*"]}}},` +
				`{"Sid":"Location","Effect":"Allow","Action":["s3:GetBucketLocation"],"Resource":["arn:aws:s3:::lake","arn:aws:s3:::other"]}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := vend.SessionPolicy(tt.grants)
			must(t, err)
			if got != tt.want {
				t.Errorf("SessionPolicy =\n%s\nwant\n%s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Error("not valid JSON")
			}
		})
	}

	for _, grants := range [][]vend.Grant{
		nil,
		{{Bucket: "lake", Prefix: "no-slash", Access: vend.Read}},
		{{Bucket: "la*ke", Prefix: "a/", Access: vend.Read}},
		{{Bucket: "lake", Prefix: "a/", Access: 0}},
	} {
		if p, err := vend.SessionPolicy(grants); floe.KindOf(err) != floe.Invalid {
			t.Errorf("SessionPolicy(%+v) = %q, %v; want Invalid", grants, p, err)
		}
	}
	// A read-listed grant (a derived snapshot's files) has no policy form:
	// refused, never widened to its prefix.
	if p, err := vend.SessionPolicy([]vend.Grant{{Bucket: "lake", Prefix: "a/metadata/floe-share-1-x/", Access: vend.ReadListed}}); floe.KindOf(err) != floe.Unsupported {
		t.Errorf("SessionPolicy(read-listed) = %q, %v; want Unsupported", p, err)
	}

	// The longest policy STS takes: 2048 characters.
	var grants []vend.Grant
	for n := 0; ; n++ {
		g := vend.Grant{Bucket: "lake", Prefix: fmt.Sprintf("ns/t%03d/", n), Access: vend.ReadWrite}
		p, err := vend.SessionPolicy(append(grants, g))
		if err != nil {
			if floe.KindOf(err) != floe.Invalid || n == 0 {
				t.Fatalf("SessionPolicy(%d grants): %v", n+1, err)
			}
			last, _ := vend.SessionPolicy(grants)
			if len(last) > vend.MaxPolicyLen || len(last) < vend.MaxPolicyLen-100 {
				t.Errorf("%d grants fit in %d characters; the next one does not", n, len(last))
			}
			break
		}
		if len(p) > vend.MaxPolicyLen {
			t.Fatalf("policy of %d characters accepted", len(p))
		}
		grants = append(grants, g)
	}
}
