package sigv4

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// suiteContext is a test case's context.json.
type suiteContext struct {
	Credentials struct {
		AccessKeyID     string `json:"access_key_id"`
		SecretAccessKey string `json:"secret_access_key"`
		Token           string `json:"token"`
	} `json:"credentials"`
	Expiration       int64  `json:"expiration_in_seconds"`
	Normalize        bool   `json:"normalize"`
	Region           string `json:"region"`
	Service          string `json:"service"`
	SignBody         bool   `json:"sign_body"`
	Timestamp        string `json:"timestamp"`
	OmitSessionToken bool   `json:"omit_session_token"`
}

// suiteRequest is a request file of the suite, as written on the wire.
type suiteRequest struct {
	method, target string
	headers        [][2]string // in order; continuation lines folded
	body           []byte
}

func parseSuiteRequest(t testing.TB, text string) suiteRequest {
	t.Helper()
	head, body, _ := strings.Cut(text, "\n\n")
	lines := strings.Split(head, "\n")
	var sr suiteRequest
	first := lines[0]
	i, j := strings.IndexByte(first, ' '), strings.LastIndexByte(first, ' ')
	if i < 0 || j <= i {
		t.Fatalf("bad request line %q", first)
	}
	sr.method, sr.target = first[:i], first[i+1:j]
	for _, l := range lines[1:] {
		if l == "" {
			continue
		}
		if l[0] == ' ' || l[0] == '\t' { // obs-fold, joined as net/textproto does
			last := &sr.headers[len(sr.headers)-1]
			last[1] += " " + strings.TrimSpace(l)
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("bad header line %q", l)
		}
		sr.headers = append(sr.headers, [2]string{k, strings.TrimSpace(v)})
	}
	sr.body = []byte(body)
	return sr
}

// clientRequest builds the request a Go client would send; the path is
// set as URL.Opaque ("//host/path", the form Go's client and aws-sdk-go-v2
// understand) so that it goes on the wire exactly as in the file.
func (sr suiteRequest) clientRequest(t testing.TB) *http.Request {
	t.Helper()
	path, query, _ := strings.Cut(sr.target, "?")
	r := &http.Request{
		Method: sr.method,
		URL:    &url.URL{Scheme: "https", Opaque: path, RawQuery: query},
		Header: http.Header{},
	}
	for _, h := range sr.headers {
		switch strings.ToLower(h[0]) {
		case "host":
			r.Host, r.URL.Host = h[1], h[1]
		case "content-length":
			n, err := strconv.ParseInt(h[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			r.ContentLength = n
		default:
			r.Header.Add(h[0], h[1])
		}
	}
	r.URL.Opaque = "//" + r.Host + path
	if len(sr.body) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(sr.body))
	}
	return r
}

// serverRequest builds the request as net/http's server presents it.
func (sr suiteRequest) serverRequest(t testing.TB) *http.Request {
	t.Helper()
	path, query, _ := strings.Cut(sr.target, "?")
	r := &http.Request{
		Method:     sr.method,
		RequestURI: sr.target,
		URL:        &url.URL{Opaque: path, RawQuery: query},
		Header:     http.Header{},
		Body:       http.NoBody,
	}
	for _, h := range sr.headers {
		if strings.EqualFold(h[0], "host") {
			r.Host = h[1]
			continue
		}
		r.Header.Add(h[0], h[1])
	}
	if len(sr.body) > 0 {
		r.ContentLength = int64(len(sr.body))
		r.Body = io.NopCloser(bytes.NewReader(sr.body))
	}
	return r.WithContext(context.Background())
}

func findSuite(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("module root not found")
		}
		dir = parent
	}
	suite := filepath.Join(dir, "..", "shared", "spec", "aws-sigv4-test-suite")
	if _, err := os.Stat(suite); err != nil {
		msg := fmt.Sprintf("!!!!!!!! SigV4 TEST SUITE MISSING at %s: suite tests SKIPPED !!!!!!!!", suite)
		fmt.Fprintln(os.Stderr, msg)
		t.Skip(msg)
	}
	return suite
}

func readFile(t testing.TB, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSuite(t *testing.T) {
	suite := findSuite(t)
	entries, err := os.ReadDir(suite)
	if err != nil {
		t.Fatal(err)
	}
	var cases int
	passed := map[string]int{}
	modes := []string{"sign-header", "sign-query", "verify-header", "verify-query"}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		cases++
		dir := filepath.Join(suite, e.Name())
		var sc suiteContext
		if err := json.Unmarshal([]byte(readFile(t, dir, "context.json")), &sc); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		t.Run(e.Name(), func(t *testing.T) {
			tests := map[string]func(*testing.T){
				"sign-header":   func(t *testing.T) { suiteSignHeader(t, dir, sc) },
				"sign-query":    func(t *testing.T) { suiteSignQuery(t, dir, sc) },
				"verify-header": func(t *testing.T) { suiteVerify(t, dir, sc, "header-signed-request.txt") },
				"verify-query":  func(t *testing.T) { suiteVerify(t, dir, sc, "query-signed-request.txt") },
			}
			for _, m := range modes {
				if t.Run(m, tests[m]) {
					passed[m]++
				}
			}
		})
	}
	if cases == 0 {
		t.Fatal("no suite cases found")
	}
	var summary []string
	for _, m := range modes {
		summary = append(summary, fmt.Sprintf("%s %d/%d", m, passed[m], cases))
	}
	t.Logf("SigV4 suite: %s", strings.Join(summary, ", "))
}

func (sc suiteContext) time(t testing.TB) time.Time {
	ts, err := time.Parse(time.RFC3339, sc.Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func (sc suiteContext) creds() Credentials {
	c := Credentials{sc.Credentials.AccessKeyID, sc.Credentials.SecretAccessKey, sc.Credentials.Token}
	if sc.OmitSessionToken {
		c.SessionToken = ""
	}
	return c
}

func suiteSignHeader(t *testing.T, dir string, sc suiteContext) {
	r := parseSuiteRequest(t, readFile(t, dir, "request.txt")).clientRequest(t)
	got, err := sign(r, sc.creds(), sc.Region, sc.Service, sc.time(t), "", SignOptions{Normalize: sc.Normalize, SignBody: sc.SignBody})
	if err != nil {
		t.Fatal(err)
	}
	if want := readFile(t, dir, "header-canonical-request.txt"); got.canonical != want {
		t.Errorf("canonical request:\n%s\nwant:\n%s", got.canonical, want)
	}
	if want := readFile(t, dir, "header-string-to-sign.txt"); got.stringToSign != want {
		t.Errorf("string to sign:\n%s\nwant:\n%s", got.stringToSign, want)
	}
	if want := strings.TrimSpace(readFile(t, dir, "header-signature.txt")); got.signature != want {
		t.Errorf("signature %s, want %s", got.signature, want)
	}
	signed := parseSuiteRequest(t, readFile(t, dir, "header-signed-request.txt"))
	for _, h := range signed.headers {
		if strings.EqualFold(h[0], "Authorization") && r.Header.Get("Authorization") != h[1] {
			t.Errorf("Authorization %q, want %q", r.Header.Get("Authorization"), h[1])
		}
	}
}

func suiteSignQuery(t *testing.T, dir string, sc suiteContext) {
	r := parseSuiteRequest(t, readFile(t, dir, "request.txt")).clientRequest(t)
	u, got, err := presign(r, sc.creds(), sc.Region, sc.Service, sc.time(t), time.Duration(sc.Expiration)*time.Second, SignOptions{Normalize: sc.Normalize})
	if err != nil {
		t.Fatal(err)
	}
	if want := readFile(t, dir, "query-canonical-request.txt"); got.canonical != want {
		t.Errorf("canonical request:\n%s\nwant:\n%s", got.canonical, want)
	}
	if want := readFile(t, dir, "query-string-to-sign.txt"); got.stringToSign != want {
		t.Errorf("string to sign:\n%s\nwant:\n%s", got.stringToSign, want)
	}
	want := strings.TrimSpace(readFile(t, dir, "query-signature.txt"))
	if got.signature != want {
		t.Errorf("signature %s, want %s", got.signature, want)
	}
	if !strings.HasSuffix(u, "&X-Amz-Signature="+want) {
		t.Errorf("presigned URL %s does not end with the signature", u)
	}
}

// suiteVerify verifies a signed request of the suite, then checks that
// changing one byte of the signature, a signed header, the path or the
// body is detected.
func suiteVerify(t *testing.T, dir string, sc suiteContext, file string) {
	sr := parseSuiteRequest(t, readFile(t, dir, file))
	ts := sc.time(t)
	v := &Verifier{
		Service:   sc.Service,
		Region:    sc.Region,
		Normalize: sc.Normalize,
		Now:       func() time.Time { return ts },
		Lookup: func(ctx context.Context, ak, token string) (string, error) {
			if ak != sc.Credentials.AccessKeyID {
				return "", errors.New("unknown key")
			}
			if token != sc.Credentials.Token {
				return "", fmt.Errorf("token %q, want %q", token, sc.Credentials.Token)
			}
			return sc.Credentials.SecretAccessKey, nil
		},
		UnsignedSessionToken: sc.OmitSessionToken,
	}
	res, err := v.Verify(sr.serverRequest(t))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if !bytes.Equal(body, sr.body) {
		t.Errorf("body %q, want %q", body, sr.body)
	}
	if res.AccessKeyID != sc.Credentials.AccessKeyID || res.SessionToken != sc.Credentials.Token ||
		res.Region != sc.Region || !res.SignedAt.Equal(ts) || res.Presigned != strings.HasPrefix(file, "query") {
		t.Errorf("result %+v", res)
	}

	mutations := map[string]func(*suiteRequest){
		"signature": func(sr *suiteRequest) {
			if i := strings.Index(sr.target, "X-Amz-Signature="); i >= 0 {
				i += len("X-Amz-Signature=")
				sr.target = sr.target[:i] + flipHex(sr.target[i:i+1]) + sr.target[i+1:]
				return
			}
			for k, h := range sr.headers {
				if strings.EqualFold(h[0], "Authorization") {
					sr.headers[k][1] = h[1][:len(h[1])-1] + flipHex(h[1][len(h[1])-1:])
				}
			}
		},
		"header": func(sr *suiteRequest) {
			for k, h := range sr.headers {
				if strings.EqualFold(h[0], "Host") {
					sr.headers[k][1] = "x" + h[1]
				}
			}
		},
		"path": func(sr *suiteRequest) {
			path, query, ok := strings.Cut(sr.target, "?")
			sr.target = path + "x"
			if ok {
				sr.target += "?" + query
			}
		},
	}
	for name, mutate := range mutations {
		m := sr
		m.headers = append([][2]string(nil), sr.headers...)
		mutate(&m)
		_, err := v.Verify(m.serverRequest(t))
		var se *Error
		if !errors.As(err, &se) || se.Code != "SignatureDoesNotMatch" || se.Status != http.StatusForbidden {
			t.Errorf("mutated %s: err %v, want SignatureDoesNotMatch", name, err)
		}
	}
	if len(sr.body) > 0 {
		m := sr
		m.body = append([]byte(nil), sr.body...)
		m.body[0] ^= 1
		res, err := v.Verify(m.serverRequest(t))
		if err == nil {
			// The body hash was signed through x-amz-content-sha256: the
			// mismatch shows when the body is read.
			_, err = io.ReadAll(res.Body)
		}
		var se *Error
		if !errors.As(err, &se) || (se.Code != "SignatureDoesNotMatch" && se.Code != "XAmzContentSHA256Mismatch") {
			t.Errorf("mutated body: err %v, want a mismatch", err)
		}
	}
}

func flipHex(s string) string {
	if s == "0" {
		return "1"
	}
	return "0"
}
