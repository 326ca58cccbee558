package s3io_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/objstore/s3io"
)

// TestAgainstEmbeddedEndpoint drives s3io through Floe's own S3 endpoint
// with a credential vended for one table.
func TestAgainstEmbeddedEndpoint(t *testing.T) {
	f := testkit.Start(t)
	ctx := context.Background()
	lt := f.CreateTable(t, "io", "t")
	c := lt.Config
	fs := s3io.New(s3.New(s3.Options{BaseEndpoint: aws.String(c["s3.endpoint"]), Region: c["client.region"], UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])}))
	base := lt.Metadata.Location
	for i := range 3 {
		if err := fs.WriteFile(ctx, fmt.Sprintf("%s/scratch/f%d.json", base, i), []byte(`{"i":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := fs.ReadFile(ctx, base+"/scratch/f1.json")
	if err != nil || string(got) != `{"i":1}` {
		t.Fatalf("read: %q %v", got, err)
	}
	if ok, err := fs.Exists(ctx, base+"/scratch/f2.json"); !ok || err != nil {
		t.Fatalf("exists: %v %v", ok, err)
	}
	if err := fs.Delete(ctx, base+"/scratch/f2.json"); err != nil {
		t.Fatal(err)
	}
	if err := fs.Delete(ctx, base+"/scratch/f2.json"); err != nil {
		t.Fatalf("deleting a missing object: %v", err)
	}
	if ok, err := fs.Exists(ctx, base+"/scratch/f2.json"); ok || err != nil {
		t.Fatalf("exists after delete: %v %v", ok, err)
	}
	if _, err := fs.ReadFile(ctx, base+"/scratch/f2.json"); floe.KindOf(err) != floe.NotFound {
		t.Fatalf("read missing: %v", err)
	}
	if err := fs.DeletePrefix(ctx, base+"/scratch"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := fs.Exists(ctx, base+"/scratch/f0.json"); ok {
		t.Fatal("DeletePrefix left f0")
	}
	if err := fs.DeletePrefix(ctx, "s3://floe"); floe.KindOf(err) != floe.Invalid {
		t.Fatalf("deleting a whole bucket: %v", err)
	}
	if _, err := fs.ReadFile(ctx, "file:///etc/passwd"); floe.KindOf(err) != floe.Invalid {
		t.Fatalf("non-s3 location: %v", err)
	}
}
