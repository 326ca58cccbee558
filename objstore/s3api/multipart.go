package s3api

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/floe-lake/floe/objstore/bucket"
)

// maxPartSize is S3's part size limit (5 GiB).
const maxPartSize = 5 << 30

func (s *Server) createMultipartUpload(ctx context.Context, q *request) error {
	o, err := putOptions(q.r.Header)
	if err != nil {
		return err
	}
	id, err := s.store.CreateMultipart(ctx, q.bucket, q.key, o)
	if err != nil {
		return err
	}
	return writeXML(q, initiateMultipartUploadResult{Bucket: q.bucket, Key: q.key, UploadID: id})
}

// partParams reads ?partNumber=&uploadId=.
func partParams(query url.Values) (int, string, error) {
	id := query.Get("uploadId")
	if id == "" {
		return 0, "", errInvalidArgument("uploadId must be given with partNumber")
	}
	n, err := strconv.Atoi(query.Get("partNumber"))
	if err != nil || n < 1 || n > maxParts {
		return 0, "", errInvalidArgument("Part number must be an integer between 1 and 10000, inclusive")
	}
	return n, id, nil
}

func (s *Server) uploadPart(ctx context.Context, q *request) error {
	part, id, err := partParams(q.query)
	if err != nil {
		return err
	}
	md5sum, err := contentMD5(q.r.Header)
	if err != nil {
		return err
	}
	body, n, err := payload(q, maxPartSize)
	if err != nil {
		return err
	}
	etag, err := s.store.UploadPart(ctx, q.bucket, q.key, id, part, body, n, md5sum)
	if err != nil {
		return err
	}
	h := q.w.Header()
	h.Set("ETag", etag)
	setChecksumHeaders(h, requestChecksums(q.r.Header))
	h.Set("Content-Length", "0")
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) uploadPartCopy(ctx context.Context, q *request) error {
	part, id, err := partParams(q.query)
	if err != nil {
		return err
	}
	h := q.r.Header
	srcBucket, srcKey, err := parseCopySource(h.Get("X-Amz-Copy-Source"))
	if err != nil {
		return err
	}
	if err := authorize(q.sess, "UploadPartCopy (source)", srcBucket, srcKey, false); err != nil {
		return err
	}
	if err := authorize(q.sess, "UploadPartCopy", q.bucket, q.key, true); err != nil {
		return err
	}
	rng := h.Get("X-Amz-Copy-Source-Range")
	if rng != "" && !strings.HasPrefix(rng, "bytes=") || strings.Contains(rng, ",") {
		return errInvalidArgument("The x-amz-copy-source-range value must be of the form bytes=first-last")
	}
	so := copySourceOptions(h)
	so.Range = rng
	return s.runSlow(ctx, q, func(ctx context.Context) (any, http.Header, error) {
		obj, err := s.store.Get(ctx, srcBucket, srcKey, so)
		if err != nil {
			return nil, nil, copyConditionFailed(err)
		}
		defer obj.Body.Close()
		if rng != "" && obj.Range == nil {
			return nil, nil, errorf("InvalidRange", http.StatusRequestedRangeNotSatisfiable, "The requested range is not satisfiable")
		}
		size := obj.Info.Size
		if obj.Range != nil {
			size = obj.Range.End - obj.Range.Start + 1
		}
		if size > maxPartSize {
			return nil, nil, errorf("EntityTooLarge", http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed object size.")
		}
		etag, err := s.store.UploadPart(ctx, q.bucket, q.key, id, part, obj.Body, size, nil)
		if err != nil {
			return nil, nil, err
		}
		return copyPartResult{LastModified: s3Time(s.now()), ETag: etag}, nil, nil
	})
}

func (s *Server) completeMultipartUpload(ctx context.Context, q *request) error {
	id := q.query.Get("uploadId")
	if id == "" {
		return errInvalidArgument("uploadId must not be empty")
	}
	data, err := readBounded(q.body, maxCompleteBody)
	if err != nil {
		return err
	}
	parts, err := parseCompleteMultipart(data)
	if err != nil {
		return err
	}
	var o bucket.PutOptions
	o.Size = -1
	if err := writeConditions(q.r.Header, &o); err != nil {
		return err
	}
	loc := (&url.URL{Scheme: scheme(q.r), Host: q.r.Host, Path: "/" + q.bucket + "/" + q.key}).String()
	return s.runSlow(ctx, q, func(ctx context.Context) (any, http.Header, error) {
		info, err := s.store.CompleteMultipart(ctx, q.bucket, q.key, id, parts, o)
		if err != nil {
			return nil, nil, err
		}
		return completeMultipartUploadResult{Location: loc, Bucket: q.bucket, Key: q.key, ETag: info.ETag}, sseHeader(info), nil
	})
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

func (s *Server) abortMultipartUpload(ctx context.Context, q *request) error {
	id := q.query.Get("uploadId")
	if id == "" {
		return errInvalidArgument("uploadId must not be empty")
	}
	if err := s.store.AbortMultipart(ctx, q.bucket, q.key, id); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

// intParam reads a non-negative integer query parameter (def when absent).
func intParam(query url.Values, name string, def int) (int, error) {
	v, ok := query[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 0 {
		return 0, errInvalidArgument("Provided " + name + " not an integer or within integer range")
	}
	return n, nil
}

func (s *Server) listParts(ctx context.Context, q *request) error {
	id := q.query.Get("uploadId")
	if id == "" {
		return errInvalidArgument("uploadId must not be empty")
	}
	marker, err := intParam(q.query, "part-number-marker", 0)
	if err != nil {
		return err
	}
	maxN, err := intParam(q.query, "max-parts", maxListKeys)
	if err != nil {
		return err
	}
	maxN = min(maxN, maxListKeys)
	parts, truncated, next, err := s.store.ListParts(ctx, q.bucket, q.key, id, marker, maxN)
	if err != nil {
		return err
	}
	out := listPartsResult{
		Bucket: q.bucket, Key: q.key, UploadID: id, StorageClass: "STANDARD",
		Initiator: xmlOwner{ID: "floe", DisplayName: "floe"}, Owner: xmlOwner{ID: "floe", DisplayName: "floe"},
		PartNumberMarker: marker, NextPartNumberMarker: next, MaxParts: maxN, IsTruncated: truncated,
	}
	for _, p := range parts {
		out.Parts = append(out.Parts, xmlPart{PartNumber: p.Number, LastModified: s3Time(p.LastModified), ETag: p.ETag, Size: p.Size})
	}
	return writeXML(q, out)
}

func (s *Server) listMultipartUploads(ctx context.Context, q *request) error {
	prefix := q.query.Get("prefix")
	keyMarker, idMarker := q.query.Get("key-marker"), q.query.Get("upload-id-marker")
	maxN, err := intParam(q.query, "max-uploads", maxListKeys)
	if err != nil {
		return err
	}
	maxN = min(maxN, maxListKeys)
	var encode bool
	switch q.query.Get("encoding-type") {
	case "":
	case "url":
		encode = true
	default:
		return errInvalidArgument("Invalid Encoding Method specified in Request")
	}
	enc := func(v string) string {
		if encode {
			return urlEncode(v)
		}
		return v
	}
	ups, err := s.store.ListMultipartUploads(ctx, q.bucket, prefix)
	if err != nil {
		return err
	}
	slices.SortFunc(ups, func(a, b bucket.Upload) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), a.Initiated.Compare(b.Initiated), strings.Compare(a.UploadID, b.UploadID))
	})
	out := listMultipartUploadsResult{Bucket: q.bucket, KeyMarker: enc(keyMarker), UploadIDMarker: idMarker,
		Prefix: enc(prefix), MaxUploads: maxN}
	if encode {
		out.EncodingType = "url"
	}
	// Resume after (key-marker, upload-id-marker): with an upload id marker,
	// later uploads of the marker key follow; without one, the key is done.
	started := keyMarker == ""
	for _, u := range ups {
		if !started {
			if u.Key < keyMarker || (u.Key == keyMarker && (idMarker == "" || u.UploadID != idMarker)) {
				continue
			}
			started = true
			if u.Key == keyMarker {
				continue // this is the marker upload itself
			}
		}
		if q.sess != nil && !q.sess.Allows(q.bucket, u.Key, false) {
			continue
		}
		if len(out.Uploads) == maxN {
			out.IsTruncated = true
			break
		}
		owner := xmlOwner{ID: "floe", DisplayName: "floe"}
		out.Uploads = append(out.Uploads, xmlUpload{Key: enc(u.Key), UploadID: u.UploadID, Initiator: owner,
			Owner: owner, StorageClass: "STANDARD", Initiated: s3Time(u.Initiated)})
		out.NextKeyMarker, out.NextUploadIDMarker = enc(u.Key), u.UploadID
	}
	if !out.IsTruncated {
		out.NextKeyMarker, out.NextUploadIDMarker = "", ""
	}
	return writeXML(q, out)
}
