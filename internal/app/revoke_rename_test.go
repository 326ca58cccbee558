package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe/internal/testkit"
)

// TestCredentialAfterRenameReads: credentials vended right after a table
// was renamed (a revocation of the table's old credentials) keep reading
// its files once every node knows of the rename, though this node's
// revocation state refreshes only every 250 ms: the catalog does not hand
// out again a credential cached before a revocation, and mints new ones
// under the revocation version read with the request's token. Before, the
// load right after the rename got the credential cached for the old name,
// refused as revoked a moment later (iceberg-go's lifecycle test saw it).
func TestCredentialAfterRenameReads(t *testing.T) {
	f := testkit.Start(t)
	ctx := context.Background()
	f.CreateTable(t, "mv", "t0")
	for i := range 6 {
		from, to := fmt.Sprintf("t%d", i), fmt.Sprintf("t%d", i+1)
		body := fmt.Sprintf(`{"source":{"namespace":["mv"],"name":%q},"destination":{"namespace":["mv"],"name":%q}}`, from, to)
		if r := f.Do(t, "POST", f.P("/tables/rename"), body); r.Status != 204 {
			t.Fatalf("rename %s: %d %s", from, r.Status, r.Body)
		}
		var tb testkit.Table
		r := f.Do(t, "GET", f.P("/namespaces/mv/tables/"+to), nil, "X-Iceberg-Access-Delegation", "vended-credentials")
		if r.Status != 200 {
			t.Fatalf("load %s: %d %s", to, r.Status, r.Body)
		}
		r.JSON(t, &tb)
		c := tb.Config
		cli := s3.New(s3.Options{BaseEndpoint: aws.String(c["s3.endpoint"]), Region: c["client.region"], UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])})
		key := strings.TrimPrefix(tb.MetadataLocation, "s3://"+f.Warehouse+"/")
		time.Sleep(600 * time.Millisecond) // every node's revocation state has the rename by now
		out, err := cli.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.Warehouse), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("rename %d: reading %s with the credentials vended just after the rename: %v", i, key, err)
		}
		_ = out.Body.Close()
	}
}

// TestDropperPurgesWithItsCredentials: after a drop, the credentials of
// the principal that dropped the table (it could read all of it) still
// read and delete its files, as Spark's DROP TABLE ... PURGE does after the
// drop; the drop's revocation is for everyone else (test_revocation.py).
func TestDropperPurgesWithItsCredentials(t *testing.T) {
	f := testkit.Start(t)
	ctx := context.Background()
	f.CreateTable(t, "purge", "t")
	var tb testkit.Table
	r := f.Do(t, "GET", f.P("/namespaces/purge/tables/t"), nil, "X-Iceberg-Access-Delegation", "vended-credentials")
	if r.Status != 200 {
		t.Fatalf("load: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &tb)
	if r := f.Do(t, "DELETE", f.P("/namespaces/purge/tables/t"), nil); r.Status != 204 {
		t.Fatalf("drop: %d %s", r.Status, r.Body)
	}
	time.Sleep(600 * time.Millisecond) // every node's revocation state has the drop by now
	c := tb.Config
	cli := s3.New(s3.Options{BaseEndpoint: aws.String(c["s3.endpoint"]), Region: c["client.region"], UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])})
	key := strings.TrimPrefix(tb.MetadataLocation, "s3://"+f.Warehouse+"/")
	out, err := cli.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.Warehouse), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("the dropper reading the dropped table's metadata: %v", err)
	}
	_ = out.Body.Close()
	if _, err := cli.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(f.Warehouse), Key: aws.String(key)}); err != nil {
		t.Fatalf("the dropper purging the dropped table's metadata: %v", err)
	}
}
