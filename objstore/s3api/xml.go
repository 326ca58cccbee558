package s3api

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/floe-lake/floe/objstore/bucket"
)

// Request body bounds for the XML operations.
const (
	maxDeleteBody   = 2 << 20 // DeleteObjects: 2 MiB
	maxDeleteKeys   = 1000
	maxCompleteBody = 4 << 20 // CompleteMultipartUpload: 10000 parts with checksums fit
	maxParts        = 10000
)

// s3Time formats t the way S3 does in XML bodies.
func s3Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// errorBody is the S3 XML error document.
type errorBody struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource,omitempty"`
	RequestID string   `xml:"RequestId"`
}

type xmlOwner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

type xmlBucket struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
	BucketRegion string `xml:"BucketRegion,omitempty"`
}

type listAllMyBucketsResult struct {
	XMLName xml.Name    `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListAllMyBucketsResult"`
	Owner   xmlOwner    `xml:"Owner"`
	Buckets []xmlBucket `xml:"Buckets>Bucket"`
}

type locationConstraint struct {
	XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ LocationConstraint"`
	Region  string   `xml:",chardata"`
}

type versioningConfiguration struct {
	XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ VersioningConfiguration"`
}

type xmlObject struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	StorageClass string `xml:"StorageClass"`
}

type xmlPrefix struct {
	Prefix string `xml:"Prefix"`
}

type listBucketResultV2 struct {
	XMLName               xml.Name    `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string      `xml:"Name"`
	Prefix                string      `xml:"Prefix"`
	Delimiter             string      `xml:"Delimiter,omitempty"`
	MaxKeys               int         `xml:"MaxKeys"`
	KeyCount              int         `xml:"KeyCount"`
	IsTruncated           bool        `xml:"IsTruncated"`
	ContinuationToken     string      `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string      `xml:"NextContinuationToken,omitempty"`
	StartAfter            string      `xml:"StartAfter,omitempty"`
	EncodingType          string      `xml:"EncodingType,omitempty"`
	Contents              []xmlObject `xml:"Contents"`
	CommonPrefixes        []xmlPrefix `xml:"CommonPrefixes"`
}

type listBucketResultV1 struct {
	XMLName        xml.Name    `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name           string      `xml:"Name"`
	Prefix         string      `xml:"Prefix"`
	Marker         string      `xml:"Marker"`
	NextMarker     string      `xml:"NextMarker,omitempty"`
	Delimiter      string      `xml:"Delimiter,omitempty"`
	MaxKeys        int         `xml:"MaxKeys"`
	IsTruncated    bool        `xml:"IsTruncated"`
	EncodingType   string      `xml:"EncodingType,omitempty"`
	Contents       []xmlObject `xml:"Contents"`
	CommonPrefixes []xmlPrefix `xml:"CommonPrefixes"`
}

type copyObjectResult struct {
	XMLName      xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CopyObjectResult"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
}

type copyPartResult struct {
	XMLName      xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CopyPartResult"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
}

type initiateMultipartUploadResult struct {
	XMLName  xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ InitiateMultipartUploadResult"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

type completeMultipartUploadResult struct {
	XMLName  xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CompleteMultipartUploadResult"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}

type xmlPart struct {
	PartNumber   int    `xml:"PartNumber"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
}

type listPartsResult struct {
	XMLName              xml.Name  `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListPartsResult"`
	Bucket               string    `xml:"Bucket"`
	Key                  string    `xml:"Key"`
	UploadID             string    `xml:"UploadId"`
	Initiator            xmlOwner  `xml:"Initiator"`
	Owner                xmlOwner  `xml:"Owner"`
	StorageClass         string    `xml:"StorageClass"`
	PartNumberMarker     int       `xml:"PartNumberMarker"`
	NextPartNumberMarker int       `xml:"NextPartNumberMarker"`
	MaxParts             int       `xml:"MaxParts"`
	IsTruncated          bool      `xml:"IsTruncated"`
	Parts                []xmlPart `xml:"Part"`
}

type xmlUpload struct {
	Key          string   `xml:"Key"`
	UploadID     string   `xml:"UploadId"`
	Initiator    xmlOwner `xml:"Initiator"`
	Owner        xmlOwner `xml:"Owner"`
	StorageClass string   `xml:"StorageClass"`
	Initiated    string   `xml:"Initiated"`
}

type listMultipartUploadsResult struct {
	XMLName            xml.Name    `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListMultipartUploadsResult"`
	Bucket             string      `xml:"Bucket"`
	KeyMarker          string      `xml:"KeyMarker"`
	UploadIDMarker     string      `xml:"UploadIdMarker"`
	NextKeyMarker      string      `xml:"NextKeyMarker"`
	NextUploadIDMarker string      `xml:"NextUploadIdMarker"`
	Prefix             string      `xml:"Prefix"`
	Delimiter          string      `xml:"Delimiter,omitempty"`
	MaxUploads         int         `xml:"MaxUploads"`
	IsTruncated        bool        `xml:"IsTruncated"`
	EncodingType       string      `xml:"EncodingType,omitempty"`
	Uploads            []xmlUpload `xml:"Upload"`
	CommonPrefixes     []xmlPrefix `xml:"CommonPrefixes"`
}

type deletedObject struct {
	Key string `xml:"Key"`
}

type deleteError struct {
	Key     string `xml:"Key"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

type deleteResult struct {
	XMLName xml.Name        `xml:"http://s3.amazonaws.com/doc/2006-03-01/ DeleteResult"`
	Deleted []deletedObject `xml:"Deleted"`
	Errors  []deleteError   `xml:"Error"`
}

// encodeXML renders v as an XML document with the declaration S3 sends.
func encodeXML(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	if err := xml.NewEncoder(&buf).Encode(v); err != nil {
		return nil, fmt.Errorf("s3api: encode %T: %w", v, err)
	}
	return buf.Bytes(), nil
}

// readBounded reads all of r, failing with MalformedXML (after reading at
// most limit+1 bytes) when the body is larger than limit.
func readBounded(r io.Reader, limit int64) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("s3api: read request body: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, errMalformedXML(fmt.Sprintf("the request body is larger than %d bytes", limit))
	}
	return data, nil
}

// deleteRequest is a parsed DeleteObjects body.
type deleteRequest struct {
	Quiet bool
	Keys  []string
}

type xmlDeleteIn struct {
	XMLName xml.Name `xml:"Delete"`
	Quiet   string   `xml:"Quiet"`
	Objects []struct {
		Key       *string `xml:"Key"`
		VersionID string  `xml:"VersionId"`
	} `xml:"Object"`
}

// parseDeleteObjects parses and validates a DeleteObjects request body: at
// least one and at most 1000 objects, each with a non-empty UTF-8 key.
func parseDeleteObjects(data []byte) (deleteRequest, error) {
	var in xmlDeleteIn
	if err := xml.Unmarshal(data, &in); err != nil {
		return deleteRequest{}, errMalformedXML(xmlErrText(err))
	}
	if len(in.Objects) == 0 {
		return deleteRequest{}, errMalformedXML("no Object elements")
	}
	if len(in.Objects) > maxDeleteKeys {
		return deleteRequest{}, errMalformedXML(fmt.Sprintf("more than %d Object elements", maxDeleteKeys))
	}
	var out deleteRequest
	switch strings.TrimSpace(in.Quiet) {
	case "", "false", "False", "FALSE":
	case "true", "True", "TRUE":
		out.Quiet = true
	default:
		return deleteRequest{}, errMalformedXML("Quiet must be true or false")
	}
	out.Keys = make([]string, 0, len(in.Objects))
	for _, o := range in.Objects {
		if o.Key == nil || *o.Key == "" {
			return deleteRequest{}, errMalformedXML("an Object has no Key")
		}
		if !utf8.ValidString(*o.Key) {
			return deleteRequest{}, errMalformedXML("a Key is not valid UTF-8")
		}
		if o.VersionID != "" && o.VersionID != "null" {
			return deleteRequest{}, errNotImplemented("versioning is not supported: VersionId must be absent or \"null\"")
		}
		out.Keys = append(out.Keys, *o.Key)
	}
	return out, nil
}

type xmlCompleteIn struct {
	XMLName xml.Name `xml:"CompleteMultipartUpload"`
	Parts   []struct {
		PartNumber string `xml:"PartNumber"`
		ETag       string `xml:"ETag"`
	} `xml:"Part"`
}

// parseCompleteMultipart parses and validates a CompleteMultipartUpload
// request body: 1..10000 parts, each with a number in 1..10000 and an ETag.
// ETags are returned quoted. Order is checked by the store (InvalidPartOrder).
func parseCompleteMultipart(data []byte) ([]bucket.CompletedPart, error) {
	var in xmlCompleteIn
	if err := xml.Unmarshal(data, &in); err != nil {
		return nil, errMalformedXML(xmlErrText(err))
	}
	if len(in.Parts) == 0 {
		return nil, errMalformedXML("no Part elements")
	}
	if len(in.Parts) > maxParts {
		return nil, errMalformedXML(fmt.Sprintf("more than %d Part elements", maxParts))
	}
	out := make([]bucket.CompletedPart, 0, len(in.Parts))
	for _, p := range in.Parts {
		n, err := strconv.Atoi(strings.TrimSpace(p.PartNumber))
		if err != nil || n < 1 || n > maxParts {
			return nil, errInvalidArgument("Part number must be an integer between 1 and 10000, inclusive")
		}
		etag := quoteETag(strings.TrimSpace(p.ETag))
		if len(etag) < 3 {
			return nil, errMalformedXML(fmt.Sprintf("part %d has no ETag", n))
		}
		out = append(out, bucket.CompletedPart{Number: n, ETag: etag})
	}
	return out, nil
}

// quoteETag returns etag in double quotes (clients send both forms).
func quoteETag(etag string) string {
	if len(etag) >= 2 && etag[0] == '"' && etag[len(etag)-1] == '"' {
		return etag
	}
	return `"` + strings.Trim(etag, `"`) + `"`
}

// xmlErrText is a short, client-safe description of a decoding error.
func xmlErrText(err error) string {
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		return se.Msg
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of document"
	}
	return "invalid document"
}

// urlEncode encodes a key for encoding-type=url responses the way S3 does:
// query-escaped (space as '+', '+' as %2B) with '/' kept literal, so that
// both url-unquote and unquote_plus decoders recover the key.
func urlEncode(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "%2F", "/")
}
