package s3api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// perm is the authorization rule an operation is checked against before it
// runs.
type perm uint8

const (
	permRead   perm = iota // read on bucket/key
	permWrite              // write on bucket/key
	permList               // read on bucket/<prefix query parameter>, the list rule
	permBucket             // any grant in the bucket (bucket metadata)
	permSelf               // the operation authorizes itself (several objects, or none)
)

// operation is one S3 API operation.
type operation struct {
	name string
	perm perm
	fn   func(s *Server, ctx context.Context, q *request) error
}

// Operations whose route is known.
var (
	opListBuckets          = operation{"ListBuckets", permSelf, (*Server).listBuckets}
	opHeadBucket           = operation{"HeadBucket", permBucket, (*Server).headBucket}
	opGetBucketLocation    = operation{"GetBucketLocation", permBucket, (*Server).getBucketLocation}
	opGetBucketVersioning  = operation{"GetBucketVersioning", permBucket, (*Server).getBucketVersioning}
	opCreateBucket         = operation{"CreateBucket", permBucket, (*Server).createBucket}
	opListObjectsV2        = operation{"ListObjectsV2", permList, (*Server).listObjectsV2}
	opListObjects          = operation{"ListObjects", permList, (*Server).listObjectsV1}
	opListMultipartUploads = operation{"ListMultipartUploads", permList, (*Server).listMultipartUploads}
	opDeleteObjects        = operation{"DeleteObjects", permSelf, (*Server).deleteObjects}
	opGetObject            = operation{"GetObject", permRead, (*Server).getObject}
	opHeadObject           = operation{"HeadObject", permRead, (*Server).headObject}
	opPutObject            = operation{"PutObject", permWrite, (*Server).putObject}
	opCopyObject           = operation{"CopyObject", permSelf, (*Server).copyObject}
	opDeleteObject         = operation{"DeleteObject", permWrite, (*Server).deleteObject}
	opCreateMultipart      = operation{"CreateMultipartUpload", permWrite, (*Server).createMultipartUpload}
	opUploadPart           = operation{"UploadPart", permWrite, (*Server).uploadPart}
	opUploadPartCopy       = operation{"UploadPartCopy", permSelf, (*Server).uploadPartCopy}
	opCompleteMultipart    = operation{"CompleteMultipartUpload", permWrite, (*Server).completeMultipartUpload}
	opAbortMultipart       = operation{"AbortMultipartUpload", permWrite, (*Server).abortMultipartUpload}
	opListParts            = operation{"ListParts", permRead, (*Server).listParts}
)

// subresources are query parameters that select an S3 API other than the
// plain object or bucket operation. Any that a route does not handle makes
// the request NotImplemented rather than silently running another operation.
var subresources = []string{
	"accelerate", "acl", "analytics", "attributes", "cors", "delete", "encryption",
	"intelligent-tiering", "inventory", "legal-hold", "lifecycle", "location", "logging",
	"metadataConfiguration", "metadataTable", "metrics", "notification", "object-lock",
	"ownershipControls", "partNumber", "policy", "policyStatus", "publicAccessBlock",
	"renameObject", "replication", "requestPayment", "restore", "retention", "select",
	"session", "tagging", "torrent", "uploadId", "uploads", "versioning", "versionId",
	"versions", "website",
}

// unhandled returns the first subresource in query that is not in allowed.
func unhandled(query url.Values, allowed ...string) string {
	for _, sr := range subresources {
		if _, ok := query[sr]; !ok {
			continue
		}
		ok := false
		for _, a := range allowed {
			if a == sr {
				ok = true
				break
			}
		}
		if !ok {
			if sr == "versionId" && query.Get(sr) == "null" {
				continue // the only version there is
			}
			return sr
		}
	}
	return ""
}

// route picks the operation for a request. The returned error (when the
// request names no supported operation) is reported after authentication;
// the operation name is then still set for the access log.
func route(method, bucketName, key string, query url.Values, h http.Header) (operation, error) {
	has := func(k string) bool { _, ok := query[k]; return ok }
	notImpl := func(name string, what string) (operation, error) {
		return operation{name: name}, errNotImplemented(fmt.Sprintf("A header or query you provided implies functionality that is not implemented: %s", what))
	}
	check := func(op operation, allowed ...string) (operation, error) {
		if sr := unhandled(query, allowed...); sr != "" {
			return notImpl(op.name, "?"+sr)
		}
		return op, nil
	}
	switch {
	case bucketName == "":
		if method == http.MethodGet {
			return check(opListBuckets)
		}
		return operation{name: "Unknown"}, errorf("MethodNotAllowed", http.StatusMethodNotAllowed, "The specified method is not allowed against this resource.")
	case key == "":
		switch method {
		case http.MethodHead:
			return check(opHeadBucket)
		case http.MethodGet:
			switch {
			case has("location"):
				return check(opGetBucketLocation, "location")
			case has("versioning"):
				return check(opGetBucketVersioning, "versioning")
			case has("uploads"):
				return check(opListMultipartUploads, "uploads")
			case query.Get("list-type") == "2":
				return check(opListObjectsV2)
			case has("list-type"):
				return operation{name: "ListObjectsV2"}, errInvalidArgument("Invalid List Type specified")
			default:
				return check(opListObjects)
			}
		case http.MethodPost:
			if has("delete") {
				return check(opDeleteObjects, "delete")
			}
			return notImpl("Unknown", "POST on a bucket")
		case http.MethodPut:
			return check(opCreateBucket)
		case http.MethodDelete:
			return notImpl("DeleteBucket", "DeleteBucket (buckets are configured in Floe)")
		}
	default:
		switch method {
		case http.MethodGet:
			if has("uploadId") {
				return check(opListParts, "uploadId")
			}
			return check(opGetObject, "partNumber")
		case http.MethodHead:
			return check(opHeadObject, "partNumber")
		case http.MethodPut:
			copySrc := h.Get("X-Amz-Copy-Source") != ""
			if has("partNumber") || has("uploadId") {
				if copySrc {
					return check(opUploadPartCopy, "partNumber", "uploadId")
				}
				return check(opUploadPart, "partNumber", "uploadId")
			}
			if copySrc {
				return check(opCopyObject)
			}
			return check(opPutObject)
		case http.MethodPost:
			switch {
			case has("uploads"):
				return check(opCreateMultipart, "uploads")
			case has("uploadId"):
				return check(opCompleteMultipart, "uploadId")
			}
			return notImpl("Unknown", "POST on an object")
		case http.MethodDelete:
			if has("uploadId") {
				return check(opAbortMultipart, "uploadId")
			}
			return check(opDeleteObject)
		}
	}
	return operation{name: "Unknown"}, errorf("MethodNotAllowed", http.StatusMethodNotAllowed, "The specified method is not allowed against this resource.")
}

// listed reports whether the request's session has a read-listed grant
// whose derived snapshot names the requested object. A view that cannot be
// read denies (and is logged).
func (s *Server) listed(q *request) bool {
	if q.sess == nil || s.opts.Listed == nil || q.key == "" {
		return false
	}
	for _, dir := range q.sess.ListedViews(q.bucket) {
		ok, err := s.opts.Listed.Contains(q.r.Context(), q.bucket, dir, q.key)
		if err != nil {
			s.log.Warn("s3: read-listed credential's view unreadable", "bucket", q.bucket, "view", dir, "err", err)
			continue
		}
		if ok {
			return true
		}
	}
	return false
}

// checkAccess applies op's authorization rule.
func (s *Server) checkAccess(q *request, op operation) error {
	if q.sess != nil && q.sess.Notice != "" {
		// A notice credential allows nothing; its notice is the answer.
		// A HEAD of an object of its table answers 200 (see headObject)
		// because a refused HEAD has no body to carry the notice: the
		// client's GET that follows gets it as the error message.
		if op.name == opHeadObject.name && q.sess.NoticeCovers(q.bucket, q.key) {
			q.noticeHead = true
			return nil
		}
		return errorf("AccessDenied", http.StatusForbidden, q.sess.Notice)
	}
	switch op.perm {
	case permRead:
		err := authorize(q.sess, op.name, q.bucket, q.key, false)
		if err != nil && s.listed(q) {
			return nil
		}
		return err
	case permWrite:
		return authorize(q.sess, op.name, q.bucket, q.key, true)
	case permList:
		prefix := q.query.Get("prefix")
		q.auditKey = prefix
		if q.sess == nil || q.sess.AllowsList(q.bucket, prefix) {
			return nil
		}
		return errListDenied(q.sess, op.name, q.bucket, prefix)
	case permBucket:
		return authorizeBucket(q.sess, op.name, q.bucket)
	case permSelf:
		return nil
	}
	return errInternal(fmt.Errorf("s3api: operation %s has no authorization rule", op.name))
}
