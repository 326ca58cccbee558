package restcat

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/sigv4"
	"github.com/floe-lake/floe/vend"
)

// signTarget is the S3 request a client asks Floe to sign.
type signTarget struct {
	url    *url.URL
	method string
	bucket string
	key    string   // "" for bucket-level requests
	list   *string  // ListObjects prefix, when the request lists
	keys   []string // DeleteObjects keys
	// copySource is the bucket/key of CopyObject or UploadPartCopy.
	copySource string
}

// parseSignTarget works out bucket, key and operation from the request to
// sign. Path-style URLs name the bucket first; otherwise the bucket is the
// first label of a virtual-hosted S3 host name.
func parseSignTarget(req remoteSignRequest, endpoint string) (*signTarget, error) {
	u, err := url.Parse(req.URI)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, floe.E(floe.Invalid, "", "uri %q is not an http(s) URL", req.URI)
	}
	m := strings.ToUpper(req.Method)
	switch m {
	case "GET", "HEAD", "PUT", "POST", "DELETE":
	default:
		return nil, floe.E(floe.Invalid, "", "method %q cannot be signed for S3", req.Method)
	}
	t := &signTarget{url: u, method: m}
	path := strings.TrimPrefix(u.Path, "/")
	pathStyle := true
	if endpoint != "" {
		if eu, err := url.Parse(endpoint); err == nil && !strings.EqualFold(eu.Host, u.Host) {
			if !strings.HasSuffix(strings.ToLower(u.Host), "."+strings.ToLower(eu.Host)) {
				return nil, floe.E(floe.Forbidden, "location", "uri host %q is not the storage endpoint %q", u.Host, eu.Host)
			}
			pathStyle = false
		}
	} else if h := strings.ToLower(u.Hostname()); strings.Contains(h, ".s3.") || strings.Contains(h, ".s3-") {
		pathStyle = false
	}
	if pathStyle {
		t.bucket, t.key, _ = strings.Cut(path, "/")
	} else {
		t.bucket, _, _ = strings.Cut(u.Hostname(), ".")
		t.key = path
	}
	if t.bucket == "" {
		return nil, floe.E(floe.Forbidden, "location", "uri %q names no bucket", req.URI)
	}
	for k, vs := range req.Headers {
		if strings.EqualFold(k, "x-amz-copy-source") && len(vs) > 0 {
			src, err := url.PathUnescape(strings.TrimPrefix(vs[0], "/"))
			if err != nil {
				return nil, floe.E(floe.Invalid, "", "malformed x-amz-copy-source")
			}
			src, _, _ = strings.Cut(src, "?versionId=")
			t.copySource = src
		}
	}
	q := u.Query()
	if t.key == "" {
		switch {
		case m == "GET" && (q.Has("list-type") || q.Has("prefix") || q.Has("delimiter") || len(q) == 0):
			p := q.Get("prefix")
			t.list = &p
		case m == "POST" && q.Has("delete"):
			keys, err := deleteKeys(req.Body)
			if err != nil {
				return nil, err
			}
			t.keys = keys
		}
	}
	return t, nil
}

func deleteKeys(body string) ([]string, error) {
	if body == "" {
		return nil, floe.E(floe.Invalid, "", "a DeleteObjects request must carry its body so that Floe can check its keys")
	}
	if len(body) > 2<<20 {
		return nil, floe.E(floe.Invalid, "", "DeleteObjects body is larger than 2 MiB")
	}
	var d struct {
		Objects []struct {
			Key string `xml:"Key"`
		} `xml:"Object"`
	}
	if err := xml.Unmarshal([]byte(body), &d); err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "malformed DeleteObjects body")
	}
	if len(d.Objects) == 0 {
		return nil, floe.E(floe.Invalid, "", "DeleteObjects body names no object")
	}
	keys := make([]string, len(d.Objects))
	for i, o := range d.Objects {
		keys[i] = o.Key
	}
	return keys, nil
}

// write reports whether the request changes objects.
func (t *signTarget) write() bool {
	return t.method == "PUT" || t.method == "POST" || t.method == "DELETE"
}

// inside reports whether every object the request touches lies under prefix.
func (t *signTarget) inside(prefix string) bool {
	if t.copySource != "" {
		b, k, _ := strings.Cut(t.copySource, "/")
		if b != t.bucket || !strings.HasPrefix(k, prefix) || strings.Contains(k, "/../") {
			return false
		}
	}
	switch {
	case t.list != nil:
		return strings.HasPrefix(*t.list, prefix) || *t.list+"/" == prefix
	case t.keys != nil:
		for _, k := range t.keys {
			if !strings.HasPrefix(k, prefix) || strings.Contains(k, "/../") {
				return false
			}
		}
		return true
	case t.key == "":
		return false
	default:
		return strings.HasPrefix(t.key, prefix) && !strings.Contains(t.key, "/../")
	}
}

// signS3 signs the request with creds and returns the headers to send.
func signS3(req remoteSignRequest, u *url.URL, creds vend.Credentials, region string) (map[string][]string, error) {
	hr, err := http.NewRequest(strings.ToUpper(req.Method), u.String(), nil)
	if err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "cannot build the request to sign")
	}
	for k, vs := range req.Headers {
		switch strings.ToLower(k) {
		case "authorization", "x-amz-date", "x-amz-security-token", "host":
			continue
		}
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	hash := hr.Header.Get("X-Amz-Content-Sha256")
	if hash == "" {
		hash = sigv4.UnsignedPayload
		hr.Header.Set("X-Amz-Content-Sha256", hash)
	}
	if region == "" {
		region = req.Region
	}
	c := sigv4.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, SessionToken: creds.SessionToken}
	if err := sigv4.Sign(hr, c, region, "s3", time.Now().UTC(), hash, sigv4.SignOptions{}); err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "cannot sign the request")
	}
	out := make(map[string][]string, len(hr.Header))
	for k, vs := range hr.Header {
		out[k] = vs
	}
	return out, nil
}
