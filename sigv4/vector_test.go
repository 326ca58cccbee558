package sigv4

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// The example of the AWS S3 documentation "Transferring payload in multiple
// chunks": 66560 bytes of 'a' sent as chunks of 65536, 1024 and 0 bytes.
const (
	awsExampleSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	awsExampleSeed   = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
)

var awsExampleChunks = []struct {
	size int
	sig  string
}{
	{65536, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"},
	{1024, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"},
	{0, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"},
}

func awsExampleRequest(corrupt bool) *http.Request {
	var body bytes.Buffer
	for _, c := range awsExampleChunks {
		body.WriteString(strconv.FormatInt(int64(c.size), 16) + ";chunk-signature=" + c.sig + "\r\n")
		data := bytes.Repeat([]byte("a"), c.size)
		if corrupt && c.size == 1024 {
			data[10] = 'b'
		}
		body.Write(data)
		body.WriteString("\r\n")
	}
	r := httptest.NewRequest("PUT", "/examplebucket/chunkObject.txt", bytes.NewReader(body.Bytes()))
	r.Host = "s3.amazonaws.com"
	r.Header.Set("X-Amz-Date", "20130524T000000Z")
	r.Header.Set("X-Amz-Storage-Class", "REDUCED_REDUNDANCY")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature="+awsExampleSeed)
	r.Header.Set("X-Amz-Content-Sha256", StreamingPayload)
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("X-Amz-Decoded-Content-Length", "66560")
	r.Header.Set("Content-Length", "66824")
	r.ContentLength = 66824
	return r
}

func TestAWSStreamingExample(t *testing.T) {
	if n := awsExampleRequest(false).ContentLength; n != 66824 {
		t.Fatalf("example body is %d bytes", n)
	}
	v := &Verifier{
		Service: "s3", Region: "us-east-1",
		Now: func() time.Time { return time.Date(2013, 5, 24, 0, 5, 0, 0, time.UTC) },
		Lookup: func(_ context.Context, ak, _ string) (string, error) {
			if ak != "AKIAIOSFODNN7EXAMPLE" {
				return "", errors.New("unknown key")
			}
			return awsExampleSecret, nil
		},
	}
	res, err := v.Verify(awsExampleRequest(false))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	got, err := io.ReadAll(res.Body)
	if err != nil || !bytes.Equal(got, bytes.Repeat([]byte("a"), 66560)) || res.DecodedLength != 66560 {
		t.Fatalf("decoded %d bytes, %v", len(got), err)
	}
	res, err = v.Verify(awsExampleRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(res.Body)
	var se *Error
	if !errors.As(err, &se) || se.Code != "SignatureDoesNotMatch" {
		t.Fatalf("corrupt chunk: %v", err)
	}
}

// TestTrailerSignatureVector checks the trailer canonical form against the
// aws-c-auth chunked-signing test (trailers first, second, third signed
// after the example's final chunk).
func TestTrailerSignatureVector(t *testing.T) {
	key := deriveKey(awsExampleSecret, "20130524", "us-east-1", "s3")
	final, _ := hex.DecodeString(awsExampleChunks[2].sig)
	s := newChunkSigner(key, "20130524T000000Z", scopeString("20130524", "us-east-1", "s3"), final)
	want, _ := hex.DecodeString("df5735bd9f3295cd9386572292562fefc93ba94e80a0a1ddcbd652c4e0a75e6c")
	if !s.verify([]byte("first:1st\nsecond:2nd\nthird:3rd\n"), want, true) {
		t.Fatal("trailer signature does not match the aws-c-auth vector")
	}
	// The chunk chain itself, from the seed.
	seed, _ := hex.DecodeString(awsExampleSeed)
	s = newChunkSigner(key, "20130524T000000Z", scopeString("20130524", "us-east-1", "s3"), seed)
	for _, c := range awsExampleChunks {
		sig, _ := hex.DecodeString(c.sig)
		if !s.verify(bytes.Repeat([]byte("a"), c.size), sig, false) {
			t.Fatalf("chunk of %d bytes", c.size)
		}
	}
}
