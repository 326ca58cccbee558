package awsspans_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/floe-lake/floe/internal/awsspans"
	"github.com/floe-lake/floe/internal/testkit/s3double"
)

// client returns an S3 client with the tracing middleware, against Floe's
// own S3 API standing in for S3.
func client(t *testing.T) *s3.Client {
	t.Helper()
	_, url := s3double.Start(t, "data")
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	cfg.APIOptions = append(cfg.APIOptions, awsspans.APIOption)
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint, o.UsePathStyle = aws.String(url), true })
}

// TestSpans: each S3 call under a recording span is a child span named like
// the embedded store's, without the bucket or key; a failed call is marked
// failed; nothing is recorded without a recording parent.
func TestSpans(t *testing.T) {
	c := client(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, root := tp.Tracer("test").Start(context.Background(), "request")
	const key = "secret-looking/key.parquet"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("data"), Key: aws.String(key), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	o, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("data"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, o.Body)
	o.Body.Close()
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("data"), Key: aws.String("missing")}); err == nil {
		t.Fatal("head of a missing object succeeded")
	}
	if _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("data")}); err != nil {
		t.Fatal(err)
	}
	root.End()

	want := []struct {
		name, op string
		failed   bool
	}{{"object.put", "PutObject", false}, {"object.get", "GetObject", false}, {"object.head", "HeadObject", true}, {"object.list", "ListObjectsV2", false}}
	var got []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() != "request" {
			got = append(got, s)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d spans, want %d", len(got), len(want))
	}
	for i, w := range want {
		s := got[i]
		if s.Name() != w.name || s.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Errorf("span %d: %s (parent %s), want %s under the request", i, s.Name(), s.Parent().SpanID(), w.name)
		}
		attrs := map[string]string{}
		for _, a := range s.Attributes() {
			attrs[string(a.Key)] = a.Value.String()
			if strings.Contains(a.Value.String(), "secret-looking") || strings.Contains(a.Value.String(), "data") {
				t.Errorf("span %s records the bucket or key: %s=%s", s.Name(), a.Key, a.Value.String())
			}
		}
		if attrs["rpc.method"] != w.op || attrs["rpc.service"] != "S3" || attrs["floe.storage"] != "s3" {
			t.Errorf("span %s attributes %v", s.Name(), attrs)
		}
		if failed := s.Status().Code == codes.Error; failed != w.failed {
			t.Errorf("span %s failed=%v, want %v", s.Name(), failed, w.failed)
		}
	}

	// Without a recording span in the context nothing is recorded.
	before := len(rec.Ended())
	if _, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("data")}); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != before {
		t.Fatalf("%d spans recorded without a traced request", n-before)
	}
}
