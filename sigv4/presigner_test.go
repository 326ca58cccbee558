package sigv4

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestS3PresignerMatchesPresign: the presigner's URLs are Presign's, for
// keys with characters that need escaping, and the verifier accepts them.
func TestS3PresignerMatchesPresign(t *testing.T) {
	c := Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "FV1.tok+en/="}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, origin := range []struct{ scheme, host string }{{"http", "127.0.0.1:9100"}, {"https", "bucket.s3.eu-west-1.amazonaws.com"}} {
		p, err := NewS3Presigner(origin.scheme, origin.host, c, "eu-west-1", at, 15*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/floe/crm/t-1/data/00000-0.parquet", "/floe/a b/région=é/x+y=z%20.parquet", "/b/k~!*'()&$,;:@[]"} {
			r := &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: origin.scheme, Host: origin.host, Path: path},
				Host: origin.host, Header: http.Header{}}
			want, err := Presign(r, c, "eu-west-1", "s3", at, 15*time.Minute, SignOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.PresignGet(path); got != want {
				t.Errorf("%s:\n got %s\nwant %s", path, got, want)
			}
		}
	}
	if _, err := NewS3Presigner("http", "h", c, "r", at, 8*24*time.Hour); err == nil {
		t.Fatal("an expiry past 7 days was accepted")
	}
	if _, err := NewS3Presigner("ftp", "h", c, "r", at, time.Hour); err == nil {
		t.Fatal("scheme ftp accepted")
	}
}

// BenchmarkPresignURL compares a URL from Presign with one from an
// S3Presigner made once per batch (what a Delta Sharing query signs).
func BenchmarkPresignURL(b *testing.B) {
	c := Credentials{AccessKeyID: "FLOEABCDEFGHIJKLMNOP", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
		SessionToken: string(make([]byte, 400))}
	at := time.Now()
	path := "/floe/crm/orders-0a1b2c/data/region=eu/00000-0-7f3a.parquet"
	b.Run("Presign", func(b *testing.B) {
		for b.Loop() {
			r := &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Host: "127.0.0.1:9100", Path: path},
				Host: "127.0.0.1:9100", Header: http.Header{}}
			if _, err := Presign(r, c, "us-east-1", "s3", at, 15*time.Minute, SignOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("S3Presigner", func(b *testing.B) {
		p, err := NewS3Presigner("http", "127.0.0.1:9100", c, "us-east-1", at, 15*time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			_ = p.PresignGet(path)
		}
	})
}
