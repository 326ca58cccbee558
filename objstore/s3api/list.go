package s3api

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/floe-lake/floe/objstore/bucket"
)

// maxListKeys is the page size limit of list operations.
const maxListKeys = 1000

// bucketExists reports NoSuchBucket for a bucket the store does not serve.
func (s *Server) bucketExists(name string) error {
	if slices.Contains(s.store.Buckets(), name) {
		return nil
	}
	return errorf("NoSuchBucket", http.StatusNotFound, "The specified bucket does not exist")
}

func (s *Server) listBuckets(_ context.Context, q *request) error {
	res := listAllMyBucketsResult{Owner: xmlOwner{ID: "floe", DisplayName: "floe"}}
	created := s3Time(s.started)
	for _, b := range s.store.Buckets() {
		if q.sess != nil && !sessionHasBucket(q.sess, b) {
			continue
		}
		res.Buckets = append(res.Buckets, xmlBucket{Name: b, CreationDate: created, BucketRegion: s.region})
	}
	return writeXML(q, res)
}

func (s *Server) headBucket(_ context.Context, q *request) error {
	if err := s.bucketExists(q.bucket); err != nil {
		return err
	}
	q.w.Header().Set("X-Amz-Bucket-Region", s.region)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) getBucketLocation(_ context.Context, q *request) error {
	if err := s.bucketExists(q.bucket); err != nil {
		return err
	}
	loc := s.region
	if loc == "us-east-1" {
		loc = "" // S3 reports the default region as an empty constraint
	}
	return writeXML(q, locationConstraint{Region: loc})
}

func (s *Server) getBucketVersioning(_ context.Context, q *request) error {
	if err := s.bucketExists(q.bucket); err != nil {
		return err
	}
	return writeXML(q, versioningConfiguration{})
}

func (s *Server) createBucket(_ context.Context, q *request) error {
	if err := s.bucketExists(q.bucket); err == nil {
		return errorf("BucketAlreadyOwnedByYou", http.StatusConflict,
			"Your previous request to create the named bucket succeeded and you already own it.")
	}
	return errNotImplemented("CreateBucket is not supported: buckets are configured in Floe")
}

// listParams are the query parameters shared by both list versions.
type listParams struct {
	prefix, delimiter string
	maxKeys           int
	encode            bool
}

func parseListParams(query url.Values) (listParams, error) {
	p := listParams{prefix: query.Get("prefix"), delimiter: query.Get("delimiter"), maxKeys: maxListKeys}
	if v, ok := query["max-keys"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 0 {
			return p, errInvalidArgument("Provided max-keys not an integer or within integer range")
		}
		p.maxKeys = min(n, maxListKeys)
	}
	switch et := query.Get("encoding-type"); et {
	case "":
	case "url":
		p.encode = true
	default:
		return p, errInvalidArgument("Invalid Encoding Method specified in Request")
	}
	return p, nil
}

func (p listParams) enc(s string) string {
	if p.encode {
		return urlEncode(s)
	}
	return s
}

// listPage runs one store listing and keeps only what the session may read
// (defense in depth: the list prefix was already authorized). last is the
// greatest key or common prefix of the page before filtering.
func (s *Server) listPage(ctx context.Context, q *request, p listParams, startAfter, token string) (res bucket.ListResult, last string, err error) {
	if p.maxKeys == 0 {
		return bucket.ListResult{}, "", s.bucketExists(q.bucket)
	}
	res, err = s.store.List(ctx, q.bucket, bucket.ListOptions{
		Prefix: p.prefix, Delimiter: p.delimiter, StartAfter: startAfter,
		ContinuationToken: token, MaxKeys: p.maxKeys,
	})
	if err != nil {
		return res, "", err
	}
	if n := len(res.Objects); n > 0 {
		last = res.Objects[n-1].Key
	}
	if n := len(res.CommonPrefixes); n > 0 && res.CommonPrefixes[n-1] > last {
		last = res.CommonPrefixes[n-1]
	}
	if q.sess != nil {
		res.Objects = slices.DeleteFunc(res.Objects, func(o bucket.ObjectInfo) bool {
			return !q.sess.AllowsList(q.bucket, o.Key)
		})
		res.CommonPrefixes = slices.DeleteFunc(res.CommonPrefixes, func(cp string) bool {
			return !q.sess.AllowsList(q.bucket, cp)
		})
	}
	return res, last, nil
}

func toXMLObjects(objs []bucket.ObjectInfo, p listParams) []xmlObject {
	out := make([]xmlObject, len(objs))
	for i, o := range objs {
		out[i] = xmlObject{Key: p.enc(o.Key), LastModified: s3Time(o.LastModified), ETag: o.ETag,
			Size: o.Size, StorageClass: "STANDARD"}
	}
	return out
}

func toXMLPrefixes(cps []string, p listParams) []xmlPrefix {
	out := make([]xmlPrefix, len(cps))
	for i, cp := range cps {
		out[i] = xmlPrefix{Prefix: p.enc(cp)}
	}
	return out
}

func (s *Server) listObjectsV2(ctx context.Context, q *request) error {
	p, err := parseListParams(q.query)
	if err != nil {
		return err
	}
	token, startAfter := q.query.Get("continuation-token"), q.query.Get("start-after")
	res, _, err := s.listPage(ctx, q, p, startAfter, token)
	if err != nil {
		return err
	}
	out := listBucketResultV2{
		Name: q.bucket, Prefix: p.enc(p.prefix), Delimiter: p.enc(p.delimiter), MaxKeys: p.maxKeys,
		KeyCount: len(res.Objects) + len(res.CommonPrefixes), IsTruncated: res.IsTruncated,
		ContinuationToken: token, NextContinuationToken: res.NextContinuationToken,
		StartAfter: p.enc(startAfter), Contents: toXMLObjects(res.Objects, p),
		CommonPrefixes: toXMLPrefixes(res.CommonPrefixes, p),
	}
	if p.encode {
		out.EncodingType = "url"
	}
	return writeXML(q, out)
}

// v1StartAfter turns a ListObjects (v1) marker into a StartAfter key. A
// marker that is a common prefix (it holds the delimiter after the list
// prefix and ends with it) was returned as NextMarker for a rolled-up group:
// resume after every key in that group. No valid UTF-8 key contains the byte
// 0xFF, so marker+"\xff" sorts after all of them.
func v1StartAfter(marker, prefix, delimiter string) string {
	if marker == "" || delimiter == "" || !strings.HasPrefix(marker, prefix) || !strings.HasSuffix(marker, delimiter) {
		return marker
	}
	if !strings.Contains(marker[len(prefix):], delimiter) {
		return marker
	}
	return marker + "\xff"
}

func (s *Server) listObjectsV1(ctx context.Context, q *request) error {
	p, err := parseListParams(q.query)
	if err != nil {
		return err
	}
	marker := q.query.Get("marker")
	res, last, err := s.listPage(ctx, q, p, v1StartAfter(marker, p.prefix, p.delimiter), "")
	if err != nil {
		return err
	}
	out := listBucketResultV1{
		Name: q.bucket, Prefix: p.enc(p.prefix), Marker: p.enc(marker), Delimiter: p.enc(p.delimiter),
		MaxKeys: p.maxKeys, IsTruncated: res.IsTruncated, Contents: toXMLObjects(res.Objects, p),
		CommonPrefixes: toXMLPrefixes(res.CommonPrefixes, p),
	}
	if res.IsTruncated {
		out.NextMarker = p.enc(last)
	}
	if p.encode {
		out.EncodingType = "url"
	}
	return writeXML(q, out)
}
