package s3api

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/floe-lake/floe/objstore/bucket"
)

// maxPutSize is S3's limit for a single PUT (5 GiB).
const maxPutSize = 5 << 30

// maxUserMetadata is S3's limit on the x-amz-meta-* headers (2 KiB).
const maxUserMetadata = 2 << 10

// checksumAlgorithms are the x-amz-checksum-* algorithms, by their header
// suffix and the store's map key.
var checksumAlgorithms = []string{"crc32", "crc32c", "crc64nvme", "sha1", "sha256"}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// getOptions reads the conditional and range headers of a GET or HEAD.
func getOptions(h http.Header) bucket.GetOptions {
	return bucket.GetOptions{
		Range:             h.Get("Range"),
		IfMatch:           h.Get("If-Match"),
		IfNoneMatch:       h.Get("If-None-Match"),
		IfModifiedSince:   httpDate(h, "If-Modified-Since"),
		IfUnmodifiedSince: httpDate(h, "If-Unmodified-Since"),
	}
}

// httpDate parses an HTTP date header. A missing or unparsable date is the
// zero time: RFC 9110 says to ignore an invalid If-Modified-Since, and S3
// does the same for the other date conditions.
func httpDate(h http.Header, name string) time.Time {
	t, err := http.ParseTime(h.Get(name))
	if err != nil {
		return time.Time{}
	}
	return t
}

// setObjectHeaders sets the metadata headers of a GET or HEAD response.
func setObjectHeaders(h http.Header, info bucket.ObjectInfo) {
	ct := info.ContentType
	if ct == "" {
		ct = "binary/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("ETag", info.ETag)
	if !info.LastModified.IsZero() {
		h.Set("Last-Modified", info.LastModified.UTC().Format(http.TimeFormat))
	}
	h.Set("Accept-Ranges", "bytes")
	for k, v := range info.UserMetadata {
		h["X-Amz-Meta-"+k] = []string{v}
	}
	if info.Encrypted {
		h.Set("X-Amz-Server-Side-Encryption", "AES256")
	}
}

// setChecksumHeaders echoes the checksums recorded for an object.
func setChecksumHeaders(h http.Header, sums map[string]string) {
	for _, alg := range checksumAlgorithms {
		if v, ok := sums[alg]; ok && v != "" {
			h.Set("X-Amz-Checksum-"+alg, v)
		}
	}
}

// responseOverrides are the GET query parameters that override response
// headers (used with presigned URLs).
var responseOverrides = map[string]string{
	"response-content-type":        "Content-Type",
	"response-content-language":    "Content-Language",
	"response-expires":             "Expires",
	"response-cache-control":       "Cache-Control",
	"response-content-disposition": "Content-Disposition",
	"response-content-encoding":    "Content-Encoding",
}

func applyOverrides(h http.Header, query url.Values) {
	for p, hdr := range responseOverrides {
		if v := query.Get(p); v != "" {
			h.Set(hdr, v)
		}
	}
}

// checkPartNumber accepts GET/HEAD ?partNumber=1 as the whole object (Floe
// does not keep part boundaries after completion); other parts do not exist.
func checkPartNumber(query url.Values) error {
	v, ok := query["partNumber"]
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 1 || n > maxParts {
		return errInvalidArgument("Part number must be an integer between 1 and 10000, inclusive")
	}
	if n != 1 {
		return errorf("InvalidPartNumber", http.StatusRequestedRangeNotSatisfiable, "The requested partnumber is not satisfiable")
	}
	return nil
}

func (s *Server) getObject(ctx context.Context, q *request) error {
	if err := checkPartNumber(q.query); err != nil {
		return err
	}
	obj, err := s.store.Get(ctx, q.bucket, q.key, getOptions(q.r.Header))
	if err != nil {
		return err
	}
	defer obj.Body.Close()
	h := q.w.Header()
	setObjectHeaders(h, obj.Info)
	status, length := http.StatusOK, obj.Info.Size
	if obj.Range != nil {
		status, length = http.StatusPartialContent, obj.Range.End-obj.Range.Start+1
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", obj.Range.Start, obj.Range.End, obj.Info.Size))
	} else if strings.EqualFold(q.r.Header.Get("X-Amz-Checksum-Mode"), "ENABLED") {
		setChecksumHeaders(h, obj.Info.Checksums)
	}
	applyOverrides(h, q.query)
	h.Set("Content-Length", itoa(length))
	q.w.WriteHeader(status)
	// io.Copy from the store's *os.File reaches net/http's ReadFrom, which
	// uses sendfile for plaintext objects.
	n, err := io.Copy(q.w, obj.Body)
	if err == nil && n != length {
		err = fmt.Errorf("s3api: object %s/%s: sent %d of %d bytes", q.bucket, q.key, n, length)
	}
	if err != nil {
		q.streamErr = err
	}
	return nil
}

// noticeSize is the size a notice HEAD claims for the object: the length
// of the error document a GET of it with the same credential gets.
// Clients read an object into a buffer of the size the HEAD gave and parse
// an error answer from that buffer: a larger claim leaves bytes after the
// document that make some (PyArrow's AWS SDK) drop the message, a smaller
// one makes them fail on the overflow. It says nothing about the object.
func noticeSize(q *request) int {
	body, err := encodeXML(errorBody{Code: "AccessDenied", Message: q.sess.Notice, Resource: q.r.URL.Path, RequestID: q.id})
	if err != nil {
		return 1
	}
	return len(body)
}

func (s *Server) headObject(ctx context.Context, q *request) error {
	if q.noticeHead {
		// Nothing about the object: neither its existence nor its size.
		h := q.w.Header()
		h.Set("X-Floe-Notice", headerSafe(q.sess.Notice))
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Length", strconv.Itoa(noticeSize(q)))
		q.w.WriteHeader(http.StatusOK)
		return nil
	}
	if err := checkPartNumber(q.query); err != nil {
		return err
	}
	o := getOptions(q.r.Header)
	rng := o.Range
	o.Range = ""
	info, err := s.store.Head(ctx, q.bucket, q.key, o)
	if err != nil {
		return err
	}
	h := q.w.Header()
	setObjectHeaders(h, info)
	status, length := http.StatusOK, info.Size
	if rng != "" {
		r, ok, err := bucket.ParseRange(rng, info.Size)
		if err != nil {
			return err
		}
		if ok {
			status, length = http.StatusPartialContent, r.End-r.Start+1
			h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", r.Start, r.End, info.Size))
		}
	}
	if status == http.StatusOK && strings.EqualFold(q.r.Header.Get("X-Amz-Checksum-Mode"), "ENABLED") {
		setChecksumHeaders(h, info.Checksums)
	}
	h.Set("Content-Length", itoa(length))
	q.w.WriteHeader(status)
	return nil
}

// putOptions reads the headers shared by PutObject, CopyObject (REPLACE) and
// CreateMultipartUpload.
func putOptions(h http.Header) (bucket.PutOptions, error) {
	o := bucket.PutOptions{ContentType: h.Get("Content-Type"), Size: -1}
	size := 0
	for k, v := range h {
		if len(k) > len("X-Amz-Meta-") && strings.EqualFold(k[:len("X-Amz-Meta-")], "X-Amz-Meta-") {
			name := strings.ToLower(k[len("X-Amz-Meta-"):])
			val := strings.Join(v, ",")
			size += len(name) + len(val)
			if o.UserMetadata == nil {
				o.UserMetadata = map[string]string{}
			}
			o.UserMetadata[name] = val
		}
	}
	if size > maxUserMetadata {
		return o, errorf("MetadataTooLarge", http.StatusBadRequest,
			fmt.Sprintf("Your metadata headers exceed the maximum allowed metadata size (%d bytes).", maxUserMetadata))
	}
	if err := writeConditions(h, &o); err != nil {
		return o, err
	}
	return o, nil
}

// writeConditions reads If-None-Match / If-Match of a write.
func writeConditions(h http.Header, o *bucket.PutOptions) error {
	o.IfMatch = h.Get("If-Match")
	switch v := h.Get("If-None-Match"); v {
	case "", "*":
		o.IfNoneMatch = v
	default:
		return errNotImplemented("If-None-Match on a write supports only \"*\"")
	}
	return nil
}

// contentMD5 decodes a Content-MD5 header.
func contentMD5(h http.Header) ([]byte, error) {
	v := h.Get("Content-Md5")
	if v == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(b) != md5.Size {
		return nil, errorf("InvalidDigest", http.StatusBadRequest, "The Content-MD5 you specified was invalid.")
	}
	return b, nil
}

// requestChecksums are the x-amz-checksum-* headers of a write (already
// verified against the payload by the sigv4 body reader).
func requestChecksums(h http.Header) map[string]string {
	var out map[string]string
	for _, alg := range checksumAlgorithms {
		if v := h.Get("X-Amz-Checksum-" + alg); v != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[alg] = v
		}
	}
	return out
}

// payload returns the request payload bounded to limit bytes and its length.
func payload(q *request, limit int64) (io.Reader, int64, error) {
	if q.bodyLen > limit {
		return nil, 0, errorf("EntityTooLarge", http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed object size.")
	}
	if q.body == nil {
		return http.NoBody, 0, nil
	}
	if q.bodyLen < 0 {
		return http.MaxBytesReader(nil, q.body, limit), -1, nil
	}
	return q.body, q.bodyLen, nil
}

func (s *Server) putObject(ctx context.Context, q *request) error {
	o, err := putOptions(q.r.Header)
	if err != nil {
		return err
	}
	if o.ContentMD5, err = contentMD5(q.r.Header); err != nil {
		return err
	}
	o.Checksums = requestChecksums(q.r.Header)
	body, n, err := payload(q, maxPutSize)
	if err != nil {
		return err
	}
	o.Size = n
	if q.trailer != nil {
		// Checksums sent as aws-chunked trailers are known (and verified)
		// only at the end of the payload; the store records o.Checksums after
		// it has read the body to io.EOF, so fill the same map then.
		if o.Checksums == nil {
			o.Checksums = map[string]string{}
		}
		body = &trailerReader{r: body, trailer: q.trailer, sums: o.Checksums}
	}
	info, err := s.store.Put(ctx, q.bucket, q.key, body, o)
	if err != nil {
		return err
	}
	h := q.w.Header()
	h.Set("ETag", info.ETag)
	setChecksumHeaders(h, mergeChecksums(info.Checksums, o.Checksums))
	if info.Encrypted {
		h.Set("X-Amz-Server-Side-Encryption", "AES256")
	}
	h.Set("Content-Length", "0")
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// trailerReader copies the x-amz-checksum-* trailers into sums when the
// payload ends.
type trailerReader struct {
	r       io.Reader
	trailer http.Header
	sums    map[string]string
}

func (t *trailerReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err == io.EOF {
		for _, alg := range checksumAlgorithms {
			if v := t.trailer.Get("X-Amz-Checksum-" + alg); v != "" {
				t.sums[alg] = v
			}
		}
	}
	return n, err
}

// sseHeader is the response header that reports encryption at rest.
func sseHeader(info bucket.ObjectInfo) http.Header {
	if !info.Encrypted {
		return nil
	}
	return http.Header{"X-Amz-Server-Side-Encryption": {"AES256"}}
}

func mergeChecksums(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make(map[string]string, len(a)+len(b))
	for k, v := range b {
		out[k] = v
	}
	for k, v := range a {
		out[k] = v
	}
	return out
}

// parseCopySource parses x-amz-copy-source: a URL-encoded "bucket/key",
// optionally with a leading "/" and "?versionId=null".
func parseCopySource(v string) (bucketName, key string, err error) {
	bad := errInvalidArgument("Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
	path, rawQuery, _ := strings.Cut(v, "?")
	if rawQuery != "" {
		qv, err := url.ParseQuery(rawQuery)
		if err != nil {
			return "", "", bad
		}
		if id := qv.Get("versionId"); id != "" && id != "null" {
			return "", "", errNotImplemented("versioning is not supported: x-amz-copy-source versionId")
		}
	}
	path, err = url.PathUnescape(path)
	if err != nil {
		return "", "", bad
	}
	path = strings.TrimPrefix(path, "/")
	bucketName, key, ok := strings.Cut(path, "/")
	if !ok || bucketName == "" || key == "" {
		return "", "", bad
	}
	return bucketName, key, nil
}

// copySourceOptions reads the x-amz-copy-source-if-* headers.
func copySourceOptions(h http.Header) bucket.GetOptions {
	o := bucket.GetOptions{
		IfMatch:     h.Get("X-Amz-Copy-Source-If-Match"),
		IfNoneMatch: h.Get("X-Amz-Copy-Source-If-None-Match"),
	}
	o.IfModifiedSince = httpDate(h, "X-Amz-Copy-Source-If-Modified-Since")
	o.IfUnmodifiedSince = httpDate(h, "X-Amz-Copy-Source-If-Unmodified-Since")
	return o
}

// copyConditionFailed maps a failed copy-source condition to 412: S3 reports
// every failed copy condition as PreconditionFailed, never NotModified.
func copyConditionFailed(err error) error {
	if bucket.CodeOf(err) == bucket.CodeNotModified {
		return errorf("PreconditionFailed", http.StatusPreconditionFailed, "At least one of the pre-conditions you specified did not hold")
	}
	return err
}

func (s *Server) copyObject(ctx context.Context, q *request) error {
	h := q.r.Header
	srcBucket, srcKey, err := parseCopySource(h.Get("X-Amz-Copy-Source"))
	if err != nil {
		return err
	}
	if err := authorize(q.sess, "CopyObject (source)", srcBucket, srcKey, false); err != nil {
		return err
	}
	if err := authorize(q.sess, "CopyObject", q.bucket, q.key, true); err != nil {
		return err
	}
	var o bucket.PutOptions
	switch d := strings.ToUpper(h.Get("X-Amz-Metadata-Directive")); d {
	case "", "COPY":
		if srcBucket == q.bucket && srcKey == q.key {
			return errorf("InvalidRequest", http.StatusBadRequest, "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
		}
		o.Size = -1
		if err := writeConditions(h, &o); err != nil {
			return err
		}
	case "REPLACE":
		if o, err = putOptions(h); err != nil {
			return err
		}
		if o.UserMetadata == nil {
			o.UserMetadata = map[string]string{} // replace with none, not keep the source's
		}
	default:
		return errInvalidArgument("Unknown metadata directive.")
	}
	so := copySourceOptions(h)
	return s.runSlow(ctx, q, func(ctx context.Context) (any, http.Header, error) {
		info, err := s.store.CopyIf(ctx, srcBucket, srcKey, so, q.bucket, q.key, o)
		if err != nil {
			return nil, nil, copyConditionFailed(err)
		}
		return copyObjectResult{LastModified: s3Time(info.LastModified), ETag: info.ETag}, sseHeader(info), nil
	})
}

func (s *Server) deleteObject(ctx context.Context, q *request) error {
	if err := s.store.Delete(ctx, q.bucket, q.key); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) deleteObjects(ctx context.Context, q *request) error {
	md5sum, err := contentMD5(q.r.Header)
	if err != nil {
		return err
	}
	data, err := readBounded(q.body, maxDeleteBody)
	if err != nil {
		return err
	}
	if md5sum != nil {
		sum := md5.Sum(data)
		if string(sum[:]) != string(md5sum) {
			return errorf("BadDigest", http.StatusBadRequest, "The Content-MD5 you specified did not match what we received.")
		}
	}
	req, err := parseDeleteObjects(data)
	if err != nil {
		return err
	}
	var res deleteResult
	for _, key := range req.Keys {
		err := authorize(q.sess, "DeleteObjects", q.bucket, key, true)
		if err == nil {
			err = s.store.Delete(ctx, q.bucket, key)
		}
		if err != nil {
			ae := toAPIError(err)
			if ae.Status >= 500 {
				s.log.ErrorContext(ctx, "s3api: delete failed", "request_id", q.id, "bucket", q.bucket, "key", key, "err", err)
			}
			if ae.Code == "NoSuchBucket" || ae.Status == 499 {
				return err
			}
			res.Errors = append(res.Errors, deleteError{Key: key, Code: ae.Code, Message: ae.Message})
			continue
		}
		if !req.Quiet {
			res.Deleted = append(res.Deleted, deletedObject{Key: key})
		}
	}
	return writeXML(q, res)
}
