package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe/internal/app"
)

// s3Target parses s3://bucket/key.
func s3Target(loc string) (bucket, key string, err error) {
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "s3" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
		return "", "", fmt.Errorf("%q is not s3://bucket/key", loc)
	}
	return u.Host, strings.TrimPrefix(u.Path, "/"), nil
}

// s3Client is an S3 client with the AWS default credential chain and the
// configuration's region, endpoint and addressing (region, s3.endpoint,
// s3.path_style), as the server's external storage uses.
func s3Client(ctx context.Context, cfg app.Config) (*s3.Client, error) {
	ac, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.Region))
	if err != nil {
		return nil, fmt.Errorf("aws configuration: %w", err)
	}
	return s3.NewFromConfig(ac, func(o *s3.Options) {
		if cfg.S3.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.S3.Endpoint)
		}
		o.UsePathStyle = cfg.S3.PathStyle
	}), nil
}

// createS3Output spools the backup to a temporary file; commit uploads it
// in one PutObject (so a failed backup uploads nothing) and removes it.
func createS3Output(ctx context.Context, cfg app.Config, loc string) (io.Writer, func() (int64, error), func(), error) {
	bucket, key, err := s3Target(loc)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--out: %w", err)
	}
	client, err := s3Client(ctx, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	f, err := os.CreateTemp("", "floe-backup-*")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("backup spool file: %w", err)
	}
	abort := func() {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}
	commit := func() (int64, error) {
		defer abort()
		size, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, fmt.Errorf("backup spool file: %w", err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, fmt.Errorf("backup spool file: %w", err)
		}
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Body: f, ContentLength: aws.Int64(size), ContentType: aws.String("application/gzip")}); err != nil {
			return 0, fmt.Errorf("upload the backup to %s: %w", loc, err)
		}
		return size, nil
	}
	return f, commit, abort, nil
}

// openS3 opens the backup object at loc.
func openS3(ctx context.Context, cfg app.Config, loc string) (io.ReadCloser, error) {
	bucket, key, err := s3Target(loc)
	if err != nil {
		return nil, fmt.Errorf("--in: %w", err)
	}
	client, err := s3Client(ctx, cfg)
	if err != nil {
		return nil, err
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("read the backup %s: %w", loc, err)
	}
	return out.Body, nil
}
