package s3api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/sigv4"
	"github.com/floe-lake/floe/vend"
)

func TestRoute(t *testing.T) {
	for _, tc := range []struct {
		method, path, query string
		copySrc             bool
		want                string
		wantErr             string
	}{
		{"GET", "/", "", false, "ListBuckets", ""},
		{"PUT", "/", "", false, "Unknown", "MethodNotAllowed"},
		{"HEAD", "/b", "", false, "HeadBucket", ""},
		{"GET", "/b", "location", false, "GetBucketLocation", ""},
		{"GET", "/b", "versioning", false, "GetBucketVersioning", ""},
		{"GET", "/b", "uploads&prefix=x", false, "ListMultipartUploads", ""},
		{"GET", "/b", "list-type=2&prefix=a", false, "ListObjectsV2", ""},
		{"GET", "/b", "list-type=3", false, "ListObjectsV2", "InvalidArgument"},
		{"GET", "/b", "", false, "ListObjects", ""},
		{"GET", "/b", "marker=x&x-id=ListObjects", false, "ListObjects", ""},
		{"GET", "/b", "acl", false, "ListObjects", "NotImplemented"},
		{"GET", "/b", "policy", false, "ListObjects", "NotImplemented"},
		{"POST", "/b", "delete", false, "DeleteObjects", ""},
		{"POST", "/b", "", false, "Unknown", "NotImplemented"},
		{"PUT", "/b", "", false, "CreateBucket", ""},
		{"PUT", "/b", "tagging", false, "CreateBucket", "NotImplemented"},
		{"DELETE", "/b", "", false, "DeleteBucket", "NotImplemented"},
		{"GET", "/b/k", "", false, "GetObject", ""},
		{"GET", "/b/k", "x-id=GetObject&versionId=null", false, "GetObject", ""},
		{"GET", "/b/k", "versionId=3", false, "GetObject", "NotImplemented"},
		{"GET", "/b/k", "partNumber=1", false, "GetObject", ""},
		{"GET", "/b/k", "tagging", false, "GetObject", "NotImplemented"},
		{"GET", "/b/k", "uploadId=u", false, "ListParts", ""},
		{"HEAD", "/b/k", "", false, "HeadObject", ""},
		{"PUT", "/b/k", "", false, "PutObject", ""},
		{"PUT", "/b/k", "x-id=PutObject", false, "PutObject", ""},
		{"PUT", "/b/k", "acl", false, "PutObject", "NotImplemented"},
		{"PUT", "/b/k", "", true, "CopyObject", ""},
		{"PUT", "/b/k", "partNumber=1&uploadId=u", false, "UploadPart", ""},
		{"PUT", "/b/k", "partNumber=1&uploadId=u", true, "UploadPartCopy", ""},
		{"POST", "/b/k", "uploads", false, "CreateMultipartUpload", ""},
		{"POST", "/b/k", "uploadId=u", false, "CompleteMultipartUpload", ""},
		{"POST", "/b/k", "restore", false, "Unknown", "NotImplemented"},
		{"DELETE", "/b/k", "", false, "DeleteObject", ""},
		{"DELETE", "/b/k", "uploadId=u", false, "AbortMultipartUpload", ""},
		{"PATCH", "/b/k", "", false, "Unknown", "MethodNotAllowed"},
		{"OPTIONS", "/b", "", false, "Unknown", "MethodNotAllowed"},
	} {
		t.Run(tc.method+" "+tc.path+"?"+tc.query, func(t *testing.T) {
			b, k, err := splitPath(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			q, _ := url.ParseQuery(tc.query)
			h := http.Header{}
			if tc.copySrc {
				h.Set("X-Amz-Copy-Source", "b/src")
			}
			op, err := route(tc.method, b, k, q, h)
			gotErr := ""
			if err != nil {
				gotErr = toAPIError(err).Code
			}
			if op.name != tc.want || gotErr != tc.wantErr {
				t.Fatalf("route = %s, %v; want %s, %s", op.name, err, tc.want, tc.wantErr)
			}
			if err == nil && op.fn == nil {
				t.Fatal("operation without a handler")
			}
		})
	}
}

// TestCheckAccess runs every routable operation with a session that has no
// grant and checks that none of them gets through to the store unchecked.
func TestCheckAccess(t *testing.T) {
	sess := &vend.Session{AccessKeyID: "AK", Grants: []vend.Grant{{Bucket: "other", Prefix: "p/", Access: vend.ReadWrite}}}
	ops := []operation{opListBuckets, opHeadBucket, opGetBucketLocation, opGetBucketVersioning, opCreateBucket,
		opListObjectsV2, opListObjects, opListMultipartUploads, opDeleteObjects, opGetObject, opHeadObject, opPutObject,
		opCopyObject, opDeleteObject, opCreateMultipart, opUploadPart, opUploadPartCopy, opCompleteMultipart,
		opAbortMultipart, opListParts}
	for _, op := range ops {
		q := &request{bucket: "b", key: "p/k", sess: sess, query: url.Values{"prefix": {"p/"}}}
		err := (&Server{}).checkAccess(q, op)
		switch op.perm {
		case permSelf:
			if err != nil {
				t.Errorf("%s: self-authorizing op rejected early: %v", op.name, err)
			}
		default:
			if toAPIError(err).Code != "AccessDenied" {
				t.Errorf("%s: err = %v, want AccessDenied", op.name, err)
			}
		}
	}
}

func TestToAPIError(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   string
		status int
	}{
		{&sigv4.Error{Code: "SignatureDoesNotMatch", Message: "m", Status: 403}, "SignatureDoesNotMatch", 403},
		{fmt.Errorf("x: %w", &sigv4.Error{Code: "XAmzContentSHA256Mismatch", Status: 400}), "XAmzContentSHA256Mismatch", 400},
		{fmt.Errorf("x: %w", vend.ErrExpired), "ExpiredToken", 400},
		{fmt.Errorf("x: %w", vend.ErrInvalidToken), "InvalidToken", 400},
		{fmt.Errorf("x: %w", vend.ErrUnknownAccessKey), "InvalidAccessKeyId", 403},
		{&bucket.Error{Code: "NoSuchKey", Message: "m", Status: 404}, "NoSuchKey", 404},
		{fmt.Errorf("wrapped: %w", &bucket.Error{Code: "KeyConflict", Status: 409}), "KeyConflict", 409},
		{&bucket.Error{Code: "InvalidPart"}, "InvalidPart", 400},
		{&bucket.Error{Code: "PreconditionFailed"}, "PreconditionFailed", 412},
		{floe.E(floe.NotFound, "file", "gone"), "NoSuchKey", 404},
		{floe.E(floe.Invalid, "", "bad"), "InvalidArgument", 400},
		{errors.New("disk on fire"), "InternalError", 500},
		{&http.MaxBytesError{Limit: 1}, "EntityTooLarge", 400},
	} {
		got := toAPIError(tc.err)
		if got.Code != tc.code || got.Status != tc.status {
			t.Errorf("toAPIError(%v) = %s %d, want %s %d", tc.err, got.Code, got.Status, tc.code, tc.status)
		}
		if got.Code == "InternalError" && strings.Contains(got.Message, "fire") {
			t.Errorf("internal detail leaked: %q", got.Message)
		}
	}
}

func TestParseCopySource(t *testing.T) {
	for _, tc := range []struct {
		in, b, k, err string
	}{
		{"b/k", "b", "k", ""},
		{"/b/dir/file%201.parquet", "b", "dir/file 1.parquet", ""},
		{"b/k%3Fx?versionId=null", "b", "k?x", ""},
		{"b/k?versionId=abc", "", "", "NotImplemented"},
		{"b", "", "", "InvalidArgument"},
		{"/b/", "", "", "InvalidArgument"},
		{"b/%zz", "", "", "InvalidArgument"},
	} {
		b, k, err := parseCopySource(tc.in)
		code := ""
		if err != nil {
			code = toAPIError(err).Code
		}
		if b != tc.b || k != tc.k || code != tc.err {
			t.Errorf("parseCopySource(%q) = %q %q %v", tc.in, b, k, err)
		}
	}
}

func TestV1StartAfter(t *testing.T) {
	for _, tc := range []struct{ marker, prefix, delim, want string }{
		{"", "", "/", ""},
		{"a/b", "", "/", "a/b"},
		{"a/", "", "/", "a/\xff"},
		{"dir/", "dir/", "/", "dir/"}, // the folder marker key itself
		{"dir/sub/", "dir/", "/", "dir/sub/\xff"},
		{"a/", "", "", "a/"},
	} {
		if got := v1StartAfter(tc.marker, tc.prefix, tc.delim); got != tc.want {
			t.Errorf("v1StartAfter(%q, %q, %q) = %q, want %q", tc.marker, tc.prefix, tc.delim, got, tc.want)
		}
	}
}

func TestURLEncode(t *testing.T) {
	for in, want := range map[string]string{
		"a/b c+d": "a/b+c%2Bd",
		"é&=?":    "%C3%A9%26%3D%3F",
	} {
		if got := urlEncode(in); got != want {
			t.Errorf("urlEncode(%q) = %q, want %q", in, got, want)
		}
		if back, err := url.QueryUnescape(urlEncode(in)); err != nil || back != in {
			t.Errorf("round trip of %q = %q, %v", in, back, err)
		}
	}
}

func TestParseDeleteObjects(t *testing.T) {
	many := strings.Repeat("<Object><Key>k</Key></Object>", maxDeleteKeys+1)
	for _, tc := range []struct {
		in    string
		quiet bool
		keys  []string
		err   string
	}{
		{`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>a</Key></Object><Object><Key>b/c</Key><VersionId>null</VersionId></Object><Quiet>true</Quiet></Delete>`, true, []string{"a", "b/c"}, ""},
		{`<Delete><Object><Key>a &amp; b</Key></Object></Delete>`, false, []string{"a & b"}, ""},
		{`<Delete></Delete>`, false, nil, "MalformedXML"},
		{`<Delete><Object></Object></Delete>`, false, nil, "MalformedXML"},
		{`<Delete><Object><Key>a</Key><VersionId>v1</VersionId></Object></Delete>`, false, nil, "NotImplemented"},
		{`<Delete><Quiet>maybe</Quiet><Object><Key>a</Key></Object></Delete>`, false, nil, "MalformedXML"},
		{`<Other><Object><Key>a</Key></Object></Other>`, false, nil, "MalformedXML"},
		{`<Delete><Object><Key>a</Key></Object>`, false, nil, "MalformedXML"},
		{`<Delete>` + many + `</Delete>`, false, nil, "MalformedXML"},
		{`<!DOCTYPE x [<!ENTITY e "boom">]><Delete><Object><Key>&e;</Key></Object></Delete>`, false, nil, "MalformedXML"},
	} {
		got, err := parseDeleteObjects([]byte(tc.in))
		code := ""
		if err != nil {
			code = toAPIError(err).Code
		}
		if code != tc.err || (err == nil && (got.Quiet != tc.quiet || fmt.Sprint(got.Keys) != fmt.Sprint(tc.keys))) {
			t.Errorf("parseDeleteObjects(%.60q) = %+v, %v", tc.in, got, err)
		}
	}
}

func TestParseCompleteMultipart(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []bucket.CompletedPart
		err  string
	}{
		{`<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><PartNumber>1</PartNumber><ETag>"e1"</ETag><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part><Part><ETag>e2</ETag><PartNumber>2</PartNumber></Part></CompleteMultipartUpload>`,
			[]bucket.CompletedPart{{Number: 1, ETag: `"e1"`}, {Number: 2, ETag: `"e2"`}}, ""},
		{`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag></Part></CompleteMultipartUpload>`,
			[]bucket.CompletedPart{{Number: 1, ETag: `"e1"`}}, ""},
		{`<CompleteMultipartUpload></CompleteMultipartUpload>`, nil, "MalformedXML"},
		{`<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>`, nil, "InvalidArgument"},
		{`<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>`, nil, "InvalidArgument"},
		{`<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>`, nil, "InvalidArgument"},
		{`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>`, nil, "MalformedXML"},
		{`not xml`, nil, "MalformedXML"},
	} {
		got, err := parseCompleteMultipart([]byte(tc.in))
		code := ""
		if err != nil {
			code = toAPIError(err).Code
		}
		if code != tc.err || (err == nil && fmt.Sprint(got) != fmt.Sprint(tc.want)) {
			t.Errorf("parseCompleteMultipart(%.60q) = %+v, %v", tc.in, got, err)
		}
	}
}

func TestReadBounded(t *testing.T) {
	if _, err := readBounded(strings.NewReader(strings.Repeat("x", 11)), 10); toAPIError(err).Code != "MalformedXML" {
		t.Fatalf("oversize body: %v", err)
	}
	if b, err := readBounded(strings.NewReader(strings.Repeat("x", 10)), 10); err != nil || len(b) != 10 {
		t.Fatalf("body at the limit: %d %v", len(b), err)
	}
}

func TestChunkedReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		declared int64
		want     string
		err      string
	}{
		{"signed", "3;chunk-signature=ab\r\nabc\r\n2;chunk-signature=cd\r\nde\r\n0;chunk-signature=ef\r\n\r\n", 5, "abcde", ""},
		{"trailer", "3\r\nabc\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n", -1, "abc", ""},
		{"no final crlf", "3\r\nabc\r\n0\r\n", 3, "abc", ""},
		{"empty", "0\r\n\r\n", 0, "", ""},
		{"short vs declared", "3\r\nabc\r\n0\r\n\r\n", 4, "abc", "IncompleteBody"},
		{"long vs declared", "3\r\nabc\r\n0\r\n\r\n", 2, "", "InvalidRequest"},
		{"truncated chunk", "5\r\nabc", -1, "abc", "IncompleteBody"},
		{"no final chunk", "3\r\nabc\r\n", -1, "abc", "IncompleteBody"},
		{"bad size", "zz\r\nabc\r\n", -1, "", "InvalidRequest"},
		{"negative size", "-1\r\n", -1, "", "InvalidRequest"},
		{"garbage after chunk", "3\r\nabcX\r\n0\r\n\r\n", -1, "abc", "InvalidRequest"},
		{"long header", strings.Repeat("1", 5000) + "\r\n", -1, "", "InvalidRequest"},
		{"no body", "", -1, "", "IncompleteBody"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := newChunkedReader(io.NopCloser(strings.NewReader(tc.in)), tc.declared)
			got, err := io.ReadAll(cr)
			code := ""
			if err != nil {
				code = toAPIError(err).Code
			}
			if string(got) != tc.want || code != tc.err {
				t.Fatalf("got %q, %v; want %q, %s", got, err, tc.want, tc.err)
			}
		})
	}
}

func FuzzDeleteObjectsXML(f *testing.F) {
	f.Add([]byte(`<Delete><Object><Key>a</Key></Object><Quiet>true</Quiet></Delete>`))
	f.Add([]byte(`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>a/b</Key><VersionId>null</VersionId></Object></Delete>`))
	f.Add([]byte(`<Delete><Object><Key></Key></Object></Delete>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := parseDeleteObjects(data)
		if err != nil {
			if ae := toAPIError(err); ae.Status != 400 && ae.Status != 501 {
				t.Fatalf("parse error is not a client error: %v", err)
			}
			return
		}
		if len(req.Keys) == 0 || len(req.Keys) > maxDeleteKeys {
			t.Fatalf("accepted %d keys", len(req.Keys))
		}
		for _, k := range req.Keys {
			if k == "" {
				t.Fatal("accepted an empty key")
			}
		}
	})
}

func FuzzCompleteMultipartXML(f *testing.F) {
	f.Add([]byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e"</ETag></Part></CompleteMultipartUpload>`))
	f.Add([]byte(`<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>e</ETag></Part><Part><PartNumber>1</PartNumber><ETag>"</ETag></Part></CompleteMultipartUpload>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		parts, err := parseCompleteMultipart(data)
		if err != nil {
			if ae := toAPIError(err); ae.Status != 400 {
				t.Fatalf("parse error is not a client error: %v", err)
			}
			return
		}
		if len(parts) == 0 || len(parts) > maxParts {
			t.Fatalf("accepted %d parts", len(parts))
		}
		for _, p := range parts {
			if p.Number < 1 || p.Number > maxParts || len(p.ETag) < 3 || p.ETag[0] != '"' || p.ETag[len(p.ETag)-1] != '"' {
				t.Fatalf("accepted part %+v", p)
			}
		}
	})
}

func FuzzChunkedReader(f *testing.F) {
	f.Add([]byte("3;chunk-signature=ab\r\nabc\r\n0;chunk-signature=ef\r\n\r\n"), int64(3))
	f.Add([]byte("3\r\nabc\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"), int64(-1))
	f.Fuzz(func(t *testing.T, data []byte, declared int64) {
		cr := newChunkedReader(io.NopCloser(bytes.NewReader(data)), declared)
		got, err := io.ReadAll(cr)
		if len(got) > len(data) {
			t.Fatalf("decoded %d bytes from %d", len(got), len(data))
		}
		if err != nil && toAPIError(err).Status != 400 {
			t.Fatalf("decode error is not a client error: %v", err)
		}
		if err == nil && declared >= 0 && int64(len(got)) != declared {
			t.Fatalf("accepted %d bytes, declared %d", len(got), declared)
		}
	})
}
