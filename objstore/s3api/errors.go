package s3api

import (
	"context"
	"errors"
	"net/http"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/sigv4"
	"github.com/floe-lake/floe/vend"
)

// apiError is an S3 error as the client sees it: Code and Message go into the
// XML body, Status is the HTTP status. Err, when set, is logged but never sent.
type apiError struct {
	Code    string
	Message string
	Status  int
	Err     error
}

func (e *apiError) Error() string {
	if e.Err != nil {
		return e.Code + ": " + e.Message + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *apiError) Unwrap() error { return e.Err }

// errorf builds an apiError with a public message.
func errorf(code string, status int, msg string) *apiError {
	return &apiError{Code: code, Message: msg, Status: status}
}

// Common client errors.
func errInvalidArgument(msg string) *apiError {
	return errorf("InvalidArgument", http.StatusBadRequest, msg)
}

func errNotImplemented(msg string) *apiError {
	return errorf("NotImplemented", http.StatusNotImplemented, msg)
}

func errMalformedXML(msg string) *apiError {
	return errorf("MalformedXML", http.StatusBadRequest,
		"The XML you provided was not well-formed or did not validate against our published schema: "+msg)
}

// statusForCode is the HTTP status of an S3 error code, for errors that carry a
// code but no status. Unknown codes are client errors (400): a code is only
// ever set for a condition the client caused or can act on.
func statusForCode(code string) int {
	switch code {
	case "NoSuchBucket", "NoSuchKey", "NoSuchUpload", "NotFound":
		return http.StatusNotFound
	case "PreconditionFailed":
		return http.StatusPreconditionFailed
	case "NotModified":
		return http.StatusNotModified
	case "InvalidRange", "InvalidPartNumber":
		return http.StatusRequestedRangeNotSatisfiable
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "RequestTimeTooSkewed", "InvalidObjectState":
		return http.StatusForbidden
	case "Conflict", "OperationAborted", "BucketAlreadyOwnedByYou", "BucketNotEmpty", "ConditionalRequestConflict":
		return http.StatusConflict
	case "MissingContentLength":
		return http.StatusLengthRequired
	case "MethodNotAllowed":
		return http.StatusMethodNotAllowed
	case "NotImplemented":
		return http.StatusNotImplemented
	case "SlowDown", "ServiceUnavailable":
		return http.StatusServiceUnavailable
	case "InternalError":
		return http.StatusInternalServerError
	default:
		return http.StatusBadRequest
	}
}

// errInternal is what the client sees for an unexpected failure.
func errInternal(err error) *apiError {
	return &apiError{Code: "InternalError", Status: http.StatusInternalServerError,
		Message: "We encountered an internal error. Please try again.", Err: err}
}

// toAPIError maps any error to the S3 error the client receives. The order
// matters: a signature or payload failure surfacing through the storage layer
// (the verified body returned it) is reported as such, not as a storage error.
func toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var se *sigv4.Error
	if errors.As(err, &se) {
		st := se.Status
		if st == 0 {
			st = statusForCode(se.Code)
		}
		return &apiError{Code: se.Code, Message: se.Message, Status: st, Err: err}
	}
	switch {
	case errors.Is(err, vend.ErrExpired):
		return &apiError{Code: "ExpiredToken", Status: http.StatusBadRequest,
			Message: "The provided token has expired.", Err: err}
	case errors.Is(err, vend.ErrInvalidToken):
		return &apiError{Code: "InvalidToken", Status: http.StatusBadRequest,
			Message: "The provided token is malformed or otherwise invalid.", Err: err}
	case errors.Is(err, vend.ErrUnknownAccessKey):
		return &apiError{Code: "InvalidAccessKeyId", Status: http.StatusForbidden,
			Message: "The AWS Access Key Id you provided does not exist in our records.", Err: err}
	}
	var be *bucket.Error
	if errors.As(err, &be) {
		if be.Code == "" || be.Code == "InternalError" {
			return errInternal(err)
		}
		st := be.Status
		if st == 0 {
			st = statusForCode(be.Code)
		}
		return &apiError{Code: be.Code, Message: be.Message, Status: st, Err: err}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &apiError{Code: "EntityTooLarge", Status: http.StatusBadRequest,
			Message: "Your proposed upload exceeds the maximum allowed object size.", Err: err}
	}
	var fe *floe.Error
	if errors.As(err, &fe) {
		return fromKind(err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The client went away (or the server is shutting down). It never sees
		// this; the code only names what happened in the access log.
		return &apiError{Code: "RequestCanceled", Status: 499,
			Message: "The request was canceled.", Err: err}
	}
	return errInternal(err)
}

// fromKind maps a domain error (floe.Error) by kind.
func fromKind(err error) *apiError {
	msg := floe.PublicMessage(err)
	var code string
	switch floe.KindOf(err) {
	case floe.Invalid, floe.Unprocessable:
		code = "InvalidArgument"
	case floe.Unauthenticated:
		code = "InvalidAccessKeyId"
	case floe.Forbidden:
		code = "AccessDenied"
	case floe.NotFound:
		code = "NoSuchKey"
	case floe.AlreadyExists, floe.NotEmpty:
		code = "Conflict"
	case floe.Conflict:
		code = "PreconditionFailed"
	case floe.Unsupported:
		code = "NotImplemented"
	case floe.Unavailable:
		code = "SlowDown"
	default:
		return errInternal(err)
	}
	return &apiError{Code: code, Message: msg, Status: statusForCode(code), Err: err}
}

// WriteError sends err as an S3 XML error for a request refused before it
// reached the server's handler (a listener's allowlist, see
// netallow.Guard): a floe.Forbidden error is AccessDenied with its public
// message.
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	q := &request{w: &responseWriter{ResponseWriter: w}, r: r, id: newRequestID(), op: "Unknown", bodyLen: -1}
	w.Header().Set("x-amz-request-id", q.id)
	w.Header().Set("Server", "Floe")
	s.writeError(q, err)
}
