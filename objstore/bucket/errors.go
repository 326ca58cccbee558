package bucket

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/floe-lake/floe"
)

// S3 error codes the store returns in an *Error. The S3 layer writes Code
// and Status as they are.
const (
	CodeNoSuchBucket       = "NoSuchBucket"
	CodeNoSuchKey          = "NoSuchKey"
	CodeNoSuchUpload       = "NoSuchUpload"
	CodePreconditionFailed = "PreconditionFailed"
	CodeNotModified        = "NotModified"
	CodeInvalidRange       = "InvalidRange"
	CodeInvalidPart        = "InvalidPart"
	CodeInvalidPartOrder   = "InvalidPartOrder"
	CodeEntityTooSmall     = "EntityTooSmall"
	CodeEntityTooLarge     = "EntityTooLarge"
	CodeBadDigest          = "BadDigest"
	CodeIncompleteBody     = "IncompleteBody"
	CodeInvalidArgument    = "InvalidArgument"
	CodeKeyTooLong         = "KeyTooLongError"
	CodeMetadataTooLarge   = "MetadataTooLarge"
	// CodeKeyConflict is returned (409) when a key collides with a
	// "directory": objects are files, so "a" and "a/b" cannot both exist.
	CodeKeyConflict = "KeyConflict"
)

// Error is a client-visible failure: an S3 error code, a message safe to show
// to the client, and the HTTP status. Every failure the client caused (or can
// act on) is an *Error, possibly wrapped; anything else is an internal error.
type Error struct {
	Code    string // S3 error code, e.g. "NoSuchKey"
	Message string // human-readable, safe to send to the client
	Status  int    // HTTP status, e.g. 404
}

// Error implements error.
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// Is reports whether target is an *Error with the same Code, so that the
// sentinels below match with errors.Is whatever the message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is; the store returns *Error values with the same Code
// and a specific Message.
var (
	ErrNoSuchBucket       = &Error{Code: CodeNoSuchBucket, Status: http.StatusNotFound}
	ErrNoSuchKey          = &Error{Code: CodeNoSuchKey, Status: http.StatusNotFound}
	ErrNoSuchUpload       = &Error{Code: CodeNoSuchUpload, Status: http.StatusNotFound}
	ErrPreconditionFailed = &Error{Code: CodePreconditionFailed, Status: http.StatusPreconditionFailed}
	ErrNotModified        = &Error{Code: CodeNotModified, Status: http.StatusNotModified}
	ErrInvalidRange       = &Error{Code: CodeInvalidRange, Status: http.StatusRequestedRangeNotSatisfiable}
	ErrKeyConflict        = &Error{Code: CodeKeyConflict, Status: http.StatusConflict}
)

var statusOf = map[string]int{
	CodeNoSuchBucket:       http.StatusNotFound,
	CodeNoSuchKey:          http.StatusNotFound,
	CodeNoSuchUpload:       http.StatusNotFound,
	CodePreconditionFailed: http.StatusPreconditionFailed,
	CodeNotModified:        http.StatusNotModified,
	CodeInvalidRange:       http.StatusRequestedRangeNotSatisfiable,
	CodeKeyConflict:        http.StatusConflict,
}

// errorf builds an *Error with the status that belongs to code (400 unless
// listed in statusOf).
func errorf(code, format string, args ...any) *Error {
	st, ok := statusOf[code]
	if !ok {
		st = http.StatusBadRequest
	}
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Status: st}
}

// CodeOf returns the S3 code of the first *Error in err's chain, or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// kindOf maps an S3 code to a Floe error kind (used by FileIO).
func kindOf(code string) floe.Kind {
	switch code {
	case CodeNoSuchBucket, CodeNoSuchKey, CodeNoSuchUpload:
		return floe.NotFound
	case CodePreconditionFailed, CodeKeyConflict:
		return floe.Conflict
	case "":
		return floe.Internal
	default:
		return floe.Invalid
	}
}

// toFloe converts a store error into a Floe domain error, keeping err in the
// chain so errors.As still finds the *Error.
func toFloe(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	fe := floe.Wrap(kindOf(e.Code), err, "%s", e.Message)
	if fe.Kind == floe.NotFound {
		fe.Entity = "file"
	}
	return fe
}
