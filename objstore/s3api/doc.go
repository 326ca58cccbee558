// Package s3api is Floe's embedded S3-compatible endpoint: an http.Handler
// that serves the buckets of a bucket.Store to external engines (Spark,
// PyIceberg, boto3, iceberg-go, DuckDB) with the short-lived credentials Floe
// vends.
//
// # Requests
//
// Only path-style addressing is served: /<bucket> and /<bucket>/<key>.
// Mount the Server at the root of its own listener (not under a path prefix,
// and not behind an http.ServeMux, which would clean "//" and ".." out of
// keys before the store can reject them).
//
// Operations: ListBuckets, HeadBucket, GetBucketLocation,
// GetBucketVersioning (always unversioned), ListObjectsV2, ListObjects (v1),
// GetObject, HeadObject, PutObject, CopyObject, DeleteObject, DeleteObjects,
// CreateMultipartUpload, UploadPart, UploadPartCopy, CompleteMultipartUpload,
// AbortMultipartUpload, ListParts and ListMultipartUploads. Any other
// subresource (?acl, ?tagging, ?policy, ...) gets 501 NotImplemented;
// CreateBucket answers BucketAlreadyOwnedByYou for a configured bucket and
// NotImplemented otherwise (buckets are configured in Floe).
//
// # Authentication and authorization
//
// Every request must carry an AWS Signature Version 4 (Authorization header
// or presigned query), checked by package sigv4 with the secret the Resolver
// returns for the access key and session token. The payload of a write is
// read only through the verifier's body reader, which fails the read (and so
// the write, before anything is published) when the payload does not match
// its signature, its declared x-amz-content-sha256, its aws-chunked chunk
// signatures or its x-amz-checksum-* header or trailer.
//
// The resolved vend.Session then decides: reads (GetObject, HeadObject,
// ListParts) need read access to the key, writes (PutObject, the copy
// destination, DeleteObject, each key of DeleteObjects, the multipart
// operations) need write access; a copy source needs read. ListObjects,
// ListObjectsV2 and ListMultipartUploads need read on the list prefix (so a
// table credential cannot list the bucket root), and results are filtered to
// keys the session may read. Bucket metadata (HeadBucket, GetBucketLocation)
// needs any grant in the bucket; ListBuckets lists only the buckets the
// session's grants name. A denial is 403 AccessDenied with a message naming
// what the credential allows and what the operation needed.
//
// A Server without a Resolver serves everything anonymously: use it only for
// an explicitly insecure local demo. It still decodes aws-chunked payloads
// but checks neither chunk signatures nor trailer checksums.
//
// # Errors and auditing
//
// Errors are S3 XML documents (<Error><Code/><Message/><Resource/><RequestId/>)
// with the status S3 uses; HEAD and 304 responses have no body. Every response
// carries x-amz-request-id. Internal failures are logged with the request id
// and reported as InternalError without detail. Options.Audit receives exactly
// one AccessEvent per request, including denied and malformed ones.
//
// # Limitations
//
// Objects are files and "directories" are directories, so a key cannot be both
// an object and a prefix of other objects: writing "a" while "a/b" exists (or
// the reverse) fails with 409 and a message saying so. There is no
// versioning, no ACLs, no tagging and no bucket management. GetObject with
// ?partNumber=1 returns the whole object (part boundaries are not kept after
// CompleteMultipartUpload); other part numbers are InvalidPartNumber.
package s3api
