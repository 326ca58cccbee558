// Package objstore holds Floe's object storage: bucket (the embedded
// store), s3api (its S3-compatible endpoint), sse (encryption at rest) and
// s3io (Floe's own I/O to an external S3). This package itself only parses
// the s3:// locations they all share.
package objstore
