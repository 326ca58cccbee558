package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	floe "github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/testkit/gluedouble"
	"github.com/floe-lake/floe/sigv4"
)

const (
	testAccount = "123456789012"
	testKey     = "AKIDGLUETEST"
	testSecret  = "glue-test-secret-never-shown"
)

// staticCreds is a credentials provider handing out a sequence of key
// pairs (the last one repeats) and counting retrievals.
type staticCreds struct {
	mu    sync.Mutex
	pairs [][2]string
	n     int
}

func (s *staticCreds) Retrieve(context.Context) (aws.Credentials, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pairs[min(s.n, len(s.pairs)-1)]
	s.n++
	return aws.Credentials{AccessKeyID: p[0], SecretAccessKey: p[1], Source: "test"}, nil
}

// upstream is a minimal Iceberg REST catalog behind the double.
func upstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer up-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.EscapedPath() {
		case "/v1/wh/namespaces":
			_, _ = io.WriteString(w, `{"namespaces":[["sales"],["a","b"]]}`)
		case "/v1/wh/namespaces/a%1Fb/tables":
			_, _ = io.WriteString(w, `{"identifiers":[{"namespace":["a","b"],"name":"t 1"}]}`)
		case "/v1/wh/namespaces/sales":
			_, _ = io.WriteString(w, `{"namespace":["sales"],"properties":{"owner":"x"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"message":"no `+r.URL.EscapedPath()+`","type":"NoSuchNamespaceException","code":404}}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func double(t *testing.T, o gluedouble.Options) (*gluedouble.Double, string) {
	t.Helper()
	up := upstream(t)
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.Keys == nil {
		o.Keys = map[string]string{testKey: testSecret}
	}
	o.Account, o.Upstream, o.UpstreamWarehouse, o.UpstreamToken = testAccount, up.URL, "wh", "up-token"
	d, srv := gluedouble.Start(t, o)
	return d, srv.URL + "/iceberg"
}

func sigClient(t *testing.T, uri string, a Auth, calls *[]Call) *Client {
	t.Helper()
	var mu sync.Mutex
	c, err := New(Options{Name: "lake", URI: uri, Warehouse: testAccount, Auth: a, CacheTTL: -1,
		Audit: func(_ context.Context, call Call) {
			mu.Lock()
			defer mu.Unlock()
			if calls != nil {
				*calls = append(*calls, call)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestSigV4Signing: requests carry the configured region and service in
// the credential scope, the SHA-256 of the empty body, and pass the
// project's verifier, through Glue's layout (URI with a path, prefix
// catalogs/<account>, multi-level namespaces).
func TestSigV4Signing(t *testing.T) {
	d, uri := double(t, gluedouble.Options{Region: "eu-west-1"})
	creds := &staticCreds{pairs: [][2]string{{testKey, testSecret}}}
	c := sigClient(t, uri, Auth{Kind: "sigv4", Region: "eu-west-1", AWSCredentials: creds}, nil)
	ctx := context.Background()
	nss, err := c.ListNamespaces(ctx, nil)
	if err != nil || len(nss) != 2 {
		t.Fatalf("namespaces %v, %v", nss, err)
	}
	ids, err := c.ListTables(ctx, []string{"a", "b"})
	if err != nil || len(ids) != 1 || ids[0].Name != "t 1" {
		t.Fatalf("tables %v, %v", ids, err)
	}
	seen := d.Seen()
	// No cache (CacheTTL -1): the prefix is fetched before each call.
	wantPaths := []string{"/iceberg/v1/config", "/iceberg/v1/catalogs/123456789012/namespaces",
		"/iceberg/v1/config", "/iceberg/v1/catalogs/123456789012/namespaces/a%1Fb/tables"}
	if len(seen) != len(wantPaths) {
		t.Fatalf("seen %+v", seen)
	}
	for i, s := range seen {
		if s.Path != wantPaths[i] || s.Status != http.StatusOK {
			t.Errorf("request %d: %s %d %s", i, s.Path, s.Status, s.Refusal)
		}
		if !strings.Contains(s.Authorization, "Credential="+testKey+"/") ||
			!strings.Contains(s.Authorization, "/eu-west-1/glue/aws4_request") {
			t.Errorf("request %d: Authorization %q", i, s.Authorization)
		}
		if s.ContentSHA256 != sigv4.EmptySHA256 {
			t.Errorf("request %d: payload hash %q", i, s.ContentSHA256)
		}
	}
	if seen[0].Query != "warehouse="+testAccount {
		t.Errorf("config query %q", seen[0].Query)
	}
	if creds.n != 1 {
		t.Errorf("credentials retrieved %d times, want 1 (cached)", creds.n)
	}
}

// TestSigV4SigningName: a signing name other than glue is used as the
// credential scope's service.
func TestSigV4SigningName(t *testing.T) {
	var got string
	v := &sigv4.Verifier{Service: "s3tables", Region: "us-west-2", Normalize: true,
		Lookup: func(context.Context, string, string) (string, error) { return testSecret, nil }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		if _, err := v.Verify(r); err != nil {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		_, _ = io.WriteString(w, `{"defaults":{},"overrides":{"prefix":"catalogs/x"}}`)
	}))
	defer srv.Close()
	c := sigClient(t, srv.URL+"/iceberg", Auth{Kind: "sigv4", Region: "us-west-2", SigningName: "s3tables",
		AWSCredentials: &staticCreds{pairs: [][2]string{{testKey, testSecret}}}}, nil)
	p, err := c.Prefix(context.Background())
	if err != nil || p != "catalogs/x" {
		t.Fatalf("prefix %q, %v (Authorization %q)", p, err, got)
	}
	if !strings.Contains(got, "/us-west-2/s3tables/aws4_request") {
		t.Fatalf("Authorization %q", got)
	}
}

// TestSigV4BodyHash: a request with a body is signed with the SHA-256 of
// that body; the verifier accepts it as sent and refuses a tampered body.
func TestSigV4BodyHash(t *testing.T) {
	c := sigClient(t, "http://glue.example/iceberg", Auth{Kind: "sigv4", Region: "us-east-1",
		AWSCredentials: &staticCreds{pairs: [][2]string{{testKey, testSecret}}}}, nil)
	v := &sigv4.Verifier{Service: "glue", Region: "us-east-1", Normalize: true,
		Lookup: func(context.Context, string, string) (string, error) { return testSecret, nil }}
	body := []byte(`{"updates":[]}`)
	sum := sha256.Sum256(body)
	for _, tc := range []struct {
		name   string
		sent   []byte
		wantOK bool
	}{
		{"as signed", body, true},
		{"tampered body", []byte(`{"updates":[1]}`), false},
		{"truncated body", body[:5], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, "http://glue.example/iceberg/v1/catalogs/1/namespaces/a/tables/t", nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.sign(context.Background(), req, body); err != nil {
				t.Fatal(err)
			}
			if h := req.Header.Get("X-Amz-Content-Sha256"); h != hex.EncodeToString(sum[:]) {
				t.Fatalf("payload hash %q", h)
			}
			req.Body = io.NopCloser(bytes.NewReader(tc.sent))
			req.ContentLength = int64(len(tc.sent))
			res, err := v.Verify(req)
			if err == nil {
				_, err = io.ReadAll(res.Body)
			}
			if (err == nil) != tc.wantOK {
				t.Fatalf("verify: %v, want ok=%v", err, tc.wantOK)
			}
		})
	}
}

// TestSigV4RetryResigned: when the remote says the credentials expired,
// the client drops its cached credentials, retrieves fresh ones and sends
// the request again, signed anew with them.
func TestSigV4RetryResigned(t *testing.T) {
	d, uri := double(t, gluedouble.Options{Keys: map[string]string{"AKIDOLD": "old-secret", "AKIDNEW": "new-secret"},
		Expired: map[string]bool{"AKIDOLD": true}})
	creds := &staticCreds{pairs: [][2]string{{"AKIDOLD", "old-secret"}, {"AKIDNEW", "new-secret"}}}
	c := sigClient(t, uri, Auth{Kind: "sigv4", Region: "us-east-1", AWSCredentials: creds}, nil)
	props, err := c.LoadNamespace(context.Background(), []string{"sales"})
	if err != nil || props["owner"] != "x" {
		t.Fatalf("load namespace %v, %v", props, err)
	}
	seen := d.Seen()
	if len(seen) != 3 || seen[0].Status != http.StatusForbidden || seen[1].Status != http.StatusOK {
		t.Fatalf("seen %+v", seen)
	}
	if !strings.Contains(seen[0].Authorization, "AKIDOLD/") || !strings.Contains(seen[1].Authorization, "AKIDNEW/") ||
		seen[0].Authorization == seen[1].Authorization || seen[0].Path != seen[1].Path {
		t.Fatalf("the retry was not re-signed with fresh credentials: %q then %q", seen[0].Authorization, seen[1].Authorization)
	}
	if creds.n != 2 {
		t.Fatalf("credentials retrieved %d times, want 2", creds.n)
	}
}

// TestSigV4Refused: the double refuses a wrong signing region or service,
// a wrong secret, an unknown key and an unsigned request; Floe reports
// each as Unavailable naming the signing region and service and quoting
// AWS's message, with no secret in the error or the audit calls.
func TestSigV4Refused(t *testing.T) {
	_, uri := double(t, gluedouble.Options{})
	good := &staticCreds{pairs: [][2]string{{testKey, testSecret}}}
	for _, tc := range []struct {
		name string
		auth Auth
		want []string
	}{
		{"wrong region", Auth{Kind: "sigv4", Region: "us-west-2", AWSCredentials: good},
			[]string{"signing region us-west-2, service glue", gluedouble.MsgWrongRegion, "HTTP 403"}},
		{"wrong service", Auth{Kind: "sigv4", Region: "us-east-1", SigningName: "s3", AWSCredentials: good},
			[]string{"signing region us-east-1, service s3", gluedouble.MsgWrongService}},
		{"wrong secret", Auth{Kind: "sigv4", Region: "us-east-1",
			AWSCredentials: &staticCreds{pairs: [][2]string{{testKey, "not-the-secret"}}}},
			[]string{"service glue", "InvalidSignatureException", "does not match"}},
		{"unknown key", Auth{Kind: "sigv4", Region: "us-east-1",
			AWSCredentials: &staticCreds{pairs: [][2]string{{"AKIDUNKNOWN", testSecret}}}},
			[]string{"UnrecognizedClientException", gluedouble.MsgUnknownKey}},
		{"unsigned", Auth{Kind: "none"}, []string{"refused Floe's credentials (HTTP 403)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []Call
			c := sigClient(t, uri, tc.auth, &calls)
			_, err := c.ListNamespaces(context.Background(), nil)
			var fe *floe.Error
			if !errors.As(err, &fe) || fe.Kind != floe.Unavailable {
				t.Fatalf("error %v, want Unavailable", err)
			}
			msg := floe.PublicMessage(err)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if len(calls) != 1 || calls[0].Status != http.StatusForbidden || calls[0].Err != msg {
				t.Errorf("audit calls %+v", calls)
			}
			for _, s := range []string{msg, err.Error(), calls[0].Err} {
				if strings.Contains(s, testSecret) || strings.Contains(s, "not-the-secret") || strings.Contains(s, "Signature=") {
					t.Errorf("a secret in %q", s)
				}
			}
		})
	}
}

// TestSigV4DefaultChain: without AWSCredentials the AWS default chain
// supplies the key pair (here from the environment).
func TestSigV4DefaultChain(t *testing.T) {
	gluedouble.SetAWSEnv(t, testKey, testSecret, "us-east-1")
	d, uri := double(t, gluedouble.Options{})
	c := sigClient(t, uri, Auth{Kind: "sigv4", Region: "us-east-1"}, nil)
	if _, err := c.ListNamespaces(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if s := d.Seen(); len(s) != 2 || !strings.Contains(s[1].Authorization, testKey+"/") {
		t.Fatalf("seen %+v", s)
	}
}

// TestSigV4AssumeRole: with a role ARN, the default chain's credentials
// call STS AssumeRole (with the external id) and the requests are signed
// with the role's temporary credentials, session token included.
func TestSigV4AssumeRole(t *testing.T) {
	gluedouble.SetAWSEnv(t, "AKIDBASE", "base-secret", "us-east-1")
	var stsForm, stsAuth string
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		stsForm, stsAuth = r.Form.Encode(), r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "text/xml")
		_, _ = io.WriteString(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>
<Credentials><AccessKeyId>ASIAROLE</AccessKeyId><SecretAccessKey>role-secret</SecretAccessKey>
<SessionToken>role-session-token</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>
<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/reader/floe</Arn><AssumedRoleId>AROA:floe</AssumedRoleId></AssumedRoleUser>
</AssumeRoleResult></AssumeRoleResponse>`)
	}))
	defer sts.Close()
	t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)
	d, uri := double(t, gluedouble.Options{Keys: map[string]string{"ASIAROLE": "role-secret"}})
	c := sigClient(t, uri, Auth{Kind: "sigv4", Region: "us-east-1",
		RoleARN: "arn:aws:iam::123456789012:role/reader", ExternalID: "ext-42"}, nil)
	if _, err := c.ListNamespaces(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Action=AssumeRole", "ExternalId=ext-42", "RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Freader",
		"RoleSessionName=floe-federation-lake"} {
		if !strings.Contains(stsForm, w) {
			t.Errorf("STS form %q lacks %q", stsForm, w)
		}
	}
	if !strings.Contains(stsAuth, "AKIDBASE/") {
		t.Errorf("STS request not signed with the base credentials: %q", stsAuth)
	}
	if s := d.Seen(); len(s) != 2 || !strings.Contains(s[1].Authorization, "ASIAROLE/") || s[1].Status != http.StatusOK {
		t.Fatalf("seen %+v", s)
	}
}

// TestSigV4Options: New validates the sigv4 fields.
func TestSigV4Options(t *testing.T) {
	for _, tc := range []struct {
		name string
		auth Auth
		want string
	}{
		{"no region", Auth{Kind: "sigv4"}, "needs a region"},
		{"bad region", Auth{Kind: "sigv4", Region: "Moon"}, "needs a region"},
		{"bad signing name", Auth{Kind: "sigv4", Region: "us-east-1", SigningName: "Glue/1"}, "signing name"},
		{"bad role", Auth{Kind: "sigv4", Region: "us-east-1", RoleARN: "reader"}, "role ARN"},
		{"external id without role", Auth{Kind: "sigv4", Region: "us-east-1", ExternalID: "x"}, "external id needs a role"},
		{"ok", Auth{Kind: "sigv4", Region: "us-gov-west-1", SigningName: "s3tables", RoleARN: "arn:aws-us-gov:iam::1:role/r", ExternalID: "x"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Options{Name: "lake", URI: "https://glue.us-east-1.amazonaws.com/iceberg", Auth: tc.auth})
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
