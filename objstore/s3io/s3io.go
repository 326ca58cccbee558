// Package s3io is Floe's own access to a warehouse on AWS S3 or an
// S3-compatible store (external S3 mode): the catalog reads and writes
// metadata files through it. It implements catalog.FileIO and
// catalog.Stater over the AWS SDK's S3 client. Engines never use it: they
// get credentials vended through STS.
package s3io

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/objstore"
)

// FS reads and writes s3:// locations with one S3 client.
type FS struct {
	client *s3.Client
}

// New returns an FS using client.
func New(client *s3.Client) *FS { return &FS{client: client} }

func notFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")
}

// ReadFile returns the whole object, or a NotFound error.
func (f *FS) ReadFile(ctx context.Context, location string) ([]byte, error) {
	b, k, err := objstore.ParseLocation(location)
	if err != nil {
		return nil, err
	}
	out, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(k)})
	if err != nil {
		if notFound(err) {
			return nil, floe.E(floe.NotFound, "file", "%s does not exist", location)
		}
		return nil, fmt.Errorf("s3 get %s: %w", location, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("s3 get %s: %w", location, err)
	}
	return data, nil
}

// WriteFile writes a new object. S3 PUTs are atomic: readers see the old
// object, or none, or the whole new one.
func (f *FS) WriteFile(ctx context.Context, location string, data []byte) error {
	b, k, err := objstore.ParseLocation(location)
	if err != nil {
		return err
	}
	_, err = f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))), ContentType: aws.String("application/json")})
	if err != nil {
		return fmt.Errorf("s3 put %s: %w", location, err)
	}
	return nil
}

// Delete removes one object; a missing object is not an error.
func (f *FS) Delete(ctx context.Context, location string) error {
	b, k, err := objstore.ParseLocation(location)
	if err != nil {
		return err
	}
	if _, err := f.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(k)}); err != nil && !notFound(err) {
		return fmt.Errorf("s3 delete %s: %w", location, err)
	}
	return nil
}

// DeletePrefix removes every object under a location prefix.
func (f *FS) DeletePrefix(ctx context.Context, prefix string) error {
	b, k, err := objstore.ParseLocation(prefix)
	if err != nil {
		return err
	}
	if k == "" {
		return floe.E(floe.Invalid, "", "refusing to delete a whole bucket (%s)", prefix)
	}
	k = strings.TrimSuffix(k, "/") + "/"
	p := s3.NewListObjectsV2Paginator(f.client, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String(k)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("s3 list %s: %w", prefix, err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]types.ObjectIdentifier, len(page.Contents))
		for i, o := range page.Contents {
			ids[i] = types.ObjectIdentifier{Key: o.Key}
		}
		out, err := f.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b),
			Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("s3 delete under %s: %w", prefix, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("s3 delete %s: %s: %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
	}
	return nil
}

// Exists reports whether an object exists.
func (f *FS) Exists(ctx context.Context, location string) (bool, error) {
	b, k, err := objstore.ParseLocation(location)
	if err != nil {
		return false, err
	}
	if _, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(k)}); err != nil {
		if notFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("s3 head %s: %w", location, err)
	}
	return true, nil
}

// HasObjects reports whether any object lies under prefix taken as a
// "directory" ("s3://b/t" covers "t/…" but not "t2"), listing at most one
// key. The bucket root is never empty for this purpose.
func (f *FS) HasObjects(ctx context.Context, prefix string) (bool, error) {
	b, k, err := objstore.ParseLocation(prefix)
	if err != nil {
		return false, err
	}
	k = strings.TrimRight(k, "/")
	if k == "" {
		return true, nil
	}
	out, err := f.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String(k + "/"), MaxKeys: aws.Int32(1)})
	if err != nil {
		return false, fmt.Errorf("s3 list %s: %w", prefix, err)
	}
	return len(out.Contents) > 0, nil
}
