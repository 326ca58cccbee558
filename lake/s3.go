package lake

import (
	"context"
	"fmt"
	"strconv"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"

	// Registers the s3:// (s3a://, s3n://) scheme with iceberg-go's FileIO registry.
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)

// S3Options locates an external S3 (or S3-compatible) warehouse.
type S3Options struct {
	// Endpoint is a custom S3 endpoint ("" = AWS).
	Endpoint string
	// PathStyle addresses buckets by path instead of by host name.
	PathStyle bool
}

// NewS3FS returns iceberg-go's S3 FileIO for the bucket of location
// (s3://bucket[/prefix]), authenticated with cfg: the server's own AWS
// configuration (default credential chain), not vended credentials. ctx
// must outlive the FileIO: it is kept for its requests.
func NewS3FS(ctx context.Context, cfg aws.Config, location string, o S3Options) (icebergio.IO, error) {
	props := map[string]string{
		icebergio.S3ForceVirtualAddressing: strconv.FormatBool(!o.PathStyle),
	}
	if o.Endpoint != "" {
		props[icebergio.S3EndpointURL] = o.Endpoint
	}
	if cfg.Region != "" {
		props[icebergio.S3Region] = cfg.Region
	}
	fsys, err := icebergio.LoadFS(utils.WithAwsConfig(ctx, &cfg), props, location)
	if err != nil {
		return nil, fmt.Errorf("lake: s3 file io for %s: %w", location, err)
	}
	return fsys, nil
}
