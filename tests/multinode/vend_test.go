package multinode

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestNodes_VendedCredentialsWorkOnEveryNode: a credential vended by one
// node is verified statelessly by every other node's S3 endpoint, and
// objects written through one node read back through another.
func TestNodes_VendedCredentialsWorkOnEveryNode(t *testing.T) {
	ns := nodes(t, 3)
	a := ns[0]
	ctx := context.Background()
	lt := a.CreateTable(t, "cv", "t")
	c := lt.Config
	client := func(endpoint string) *s3.Client {
		return s3.New(s3.Options{BaseEndpoint: aws.String(endpoint), Region: c["client.region"], UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])})
	}
	key := strings.TrimPrefix(lt.Metadata.Location, "s3://floe/") + "/data/part-0.parquet"
	if _, err := client(ns[1].App.S3URL()).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("floe"), Key: aws.String(key),
		Body: strings.NewReader("written through node 2")}); err != nil {
		t.Fatalf("put through node 2 with node 1's credential: %v", err)
	}
	out, err := client(ns[2].App.S3URL()).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("floe"), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get through node 3: %v", err)
	}
	b, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(b) != "written through node 2" {
		t.Fatalf("read %q", b)
	}
}
