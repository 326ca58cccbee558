package gluedouble_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/floe-lake/floe/internal/testkit/gluedouble"
)

const (
	account = "123456789012"
	key     = "AKIDDOUBLE"
	secret  = "double-secret"
)

// start runs the double in front of an upstream that echoes what it got.
func start(t *testing.T) string {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"path": r.URL.EscapedPath(), "query": r.URL.RawQuery,
			"authorization": r.Header.Get("Authorization"), "amz": r.Header.Get("X-Amz-Date"),
			"delegation": r.Header.Get("X-Iceberg-Access-Delegation"), "body": string(body)})
	}))
	t.Cleanup(up.Close)
	_, srv := gluedouble.Start(t, gluedouble.Options{Region: "us-east-1", Keys: map[string]string{key: secret},
		Account: account, Upstream: up.URL, UpstreamWarehouse: "wh", UpstreamToken: "up-token"})
	return srv.URL
}

// signed builds a request signed with aws-sdk-go-v2's signer; tamper
// changes it after signing.
func signed(t *testing.T, base, method, path string, body []byte, region, service, sk string, tamper func(*http.Request)) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Iceberg-Access-Delegation", "vended-credentials")
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if service != "" {
		err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: key, SecretAccessKey: sk},
			req, hash, service, region, time.Now())
		if err != nil {
			t.Fatal(err)
		}
	}
	if tamper != nil {
		tamper(req)
	}
	return req
}

// TestDouble: a correctly signed request is served in Glue's layout and
// proxied with the upstream's token; each attack is refused with 403 and
// AWS's error type and message, and never reaches the upstream.
func TestDouble(t *testing.T) {
	base := start(t)
	table := "/iceberg/v1/catalogs/" + account + "/namespaces/a%1Fb/tables/t"
	body := []byte(`{"requirements":[],"updates":[]}`)
	for _, tc := range []struct {
		name          string
		method, path  string
		body          []byte
		region, svc   string
		sk            string
		tamper        func(*http.Request)
		status        int
		code, message string // of a refusal
		upstreamPath  string // of a success
	}{
		{name: "config", method: "GET", path: "/iceberg/v1/config?warehouse=" + account, region: "us-east-1", svc: "glue", sk: secret,
			status: 200},
		{name: "load table", method: "GET", path: table, region: "us-east-1", svc: "glue", sk: secret,
			status: 200, upstreamPath: "/v1/wh/namespaces/a%1Fb/tables/t"},
		{name: "commit with body", method: "POST", path: table, body: body, region: "us-east-1", svc: "glue", sk: secret,
			status: 200, upstreamPath: "/v1/wh/namespaces/a%1Fb/tables/t"},
		{name: "other warehouse", method: "GET", path: "/iceberg/v1/config?warehouse=999999999999", region: "us-east-1", svc: "glue", sk: secret,
			status: 404},
		{name: "unsigned", method: "GET", path: table, status: 403,
			code: "MissingAuthenticationTokenException", message: gluedouble.MsgMissingToken},
		{name: "wrong region", method: "GET", path: table, region: "eu-west-1", svc: "glue", sk: secret, status: 403,
			code: "InvalidSignatureException", message: gluedouble.MsgWrongRegion},
		{name: "wrong service", method: "GET", path: table, region: "us-east-1", svc: "s3", sk: secret, status: 403,
			code: "InvalidSignatureException", message: gluedouble.MsgWrongService},
		{name: "wrong secret", method: "GET", path: table, region: "us-east-1", svc: "glue", sk: "guess", status: 403,
			code: "InvalidSignatureException", message: gluedouble.MsgBadSignature},
		{name: "tampered body", method: "POST", path: table, body: body, region: "us-east-1", svc: "glue", sk: secret,
			tamper: func(r *http.Request) {
				evil := []byte(`{"requirements":[],"updates":[{"action":"remove-snapshots"}]}`)
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(evil)), int64(len(evil))
			}, status: 403, code: "InvalidSignatureException", message: gluedouble.MsgBadSignature},
		{name: "tampered body and hash", method: "POST", path: table, body: body, region: "us-east-1", svc: "glue", sk: secret,
			tamper: func(r *http.Request) {
				evil := []byte(`{}`)
				sum := sha256.Sum256(evil)
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(evil)), int64(len(evil))
				r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
			}, status: 403, code: "InvalidSignatureException", message: gluedouble.MsgBadSignature},
		{name: "other path", method: "GET", path: table, region: "us-east-1", svc: "glue", sk: secret,
			tamper: func(r *http.Request) {
				r.URL.RawPath, r.URL.Path = "", "/iceberg/v1/catalogs/"+account+"/namespaces/a/tables/t"
			},
			status: 403, code: "InvalidSignatureException", message: gluedouble.MsgBadSignature},
		{name: "unsigned delegation header", method: "GET", path: table, region: "us-east-1", svc: "glue", sk: secret,
			tamper: func(r *http.Request) { r.Header.Set("X-Iceberg-Access-Delegation", "remote-signing") },
			status: 403, code: "InvalidSignatureException", message: gluedouble.MsgBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := signed(t, base, tc.method, tc.path, tc.body, tc.region, tc.svc, tc.sk, tc.tamper)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, out)
			}
			if tc.code != "" {
				var em struct {
					Message string `json:"message"`
				}
				if resp.Header.Get("X-Amzn-Errortype") != tc.code || json.Unmarshal(out, &em) != nil || em.Message != tc.message {
					t.Fatalf("refusal %s %s, want %s %q", resp.Header.Get("X-Amzn-Errortype"), out, tc.code, tc.message)
				}
				return
			}
			if tc.upstreamPath == "" {
				return
			}
			var got map[string]string
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if got["path"] != tc.upstreamPath || got["authorization"] != "Bearer up-token" || got["amz"] != "" ||
				got["delegation"] != "vended-credentials" || got["body"] != string(tc.body) {
				t.Fatalf("upstream got %v", got)
			}
		})
	}
}

// TestDoubleConfig: the config answers Glue's prefix for the account.
func TestDoubleConfig(t *testing.T) {
	base := start(t)
	req := signed(t, base, "GET", "/iceberg/v1/config?warehouse="+account, nil, "us-east-1", "glue", secret, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cfg struct {
		Overrides map[string]string `json:"overrides"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cfg); err != nil || cfg.Overrides["prefix"] != "catalogs/"+account {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	if !strings.HasPrefix(req.Header.Get("Authorization"), "AWS4-HMAC-SHA256") {
		t.Fatal("not signed")
	}
}
