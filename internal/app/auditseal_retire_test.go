package app

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/testkit/s3double"
	"github.com/floe-lake/floe/objstore/bucket"
)

// TestSealObjectsRetire checks RetireSeal of both warehouse seal stores,
// the embedded one and external S3 (Floe's own S3 API standing in): the
// seal leaves the listing, is kept under the retired prefix byte for byte,
// and retiring it again is not an error.
func TestSealObjectsRetire(t *testing.T) {
	objs, url := s3double.Start(t, "whouse")
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")})
	const root = "warehouse/"
	stores := []struct {
		name string
		objs audit.SealRetirer
	}{
		{"embedded", bucketSeals{s: objs, bucket: "whouse", prefix: root + "e/" + audit.SealPrefix, retired: root + "e/" + audit.RetiredSealPrefix}},
		{"s3", s3Seals{c: client, bucket: "whouse", prefix: root + "s/" + audit.SealPrefix, retired: root + "s/" + audit.RetiredSealPrefix}},
	}
	for _, tc := range stores {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			prefix := root + map[string]string{"embedded": "e/", "s3": "s/"}[tc.name]
			for _, n := range []string{"00000000000000000010.json", "00000000000000000020.json"} {
				if err := tc.objs.CreateSeal(ctx, n, []byte(`{"n":"`+n+`"}`)); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.objs.RetireSeal(ctx, "00000000000000000020.json", "restore-x"); err != nil {
				t.Fatal(err)
			}
			names, err := tc.objs.ListSeals(ctx, "", 10)
			if err != nil || !slices.Equal(names, []string{"00000000000000000010.json"}) {
				t.Fatalf("listing after retiring: %v %v", names, err)
			}
			o, err := objs.Get(ctx, "whouse", prefix+audit.RetiredSealPrefix+"restore-x/00000000000000000020.json", bucket.GetOptions{})
			if err != nil {
				t.Fatalf("the retired seal is not kept: %v", err)
			}
			got, err := io.ReadAll(o.Body)
			o.Body.Close()
			if err != nil || string(got) != `{"n":"00000000000000000020.json"}` {
				t.Fatalf("the retired seal holds %q, %v", got, err)
			}
			if err := tc.objs.RetireSeal(ctx, "00000000000000000020.json", "restore-x"); err != nil {
				t.Fatalf("retiring again: %v", err)
			}
		})
	}
}
