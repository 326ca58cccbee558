// Package floe holds the types every Floe package shares: the error kinds that
// domain code returns and that each protocol edge maps to its own error format.
package floe

import (
	"errors"
	"fmt"
)

// Kind classifies an error by what the caller can do about it. Transports map
// each Kind to their own error format (Iceberg ErrorModel, S3 XML, OAuth2
// error JSON, PostgreSQL SQLSTATE). Do not reorder: append new kinds at the end.
type Kind int

const (
	// Internal is an unexpected failure; the client sees only a generic message.
	Internal Kind = iota
	// Invalid means the request was malformed or violates a rule.
	Invalid
	// Unauthenticated means no valid credential was presented.
	Unauthenticated
	// Forbidden means the caller is known but lacks a privilege.
	Forbidden
	// NotFound means the named entity does not exist.
	NotFound
	// AlreadyExists means an entity with that name exists.
	AlreadyExists
	// NotEmpty means a container still holds entities.
	NotEmpty
	// Conflict means a commit requirement failed; the client may retry.
	Conflict
	// Indeterminate means the outcome of a commit is unknown.
	Indeterminate
	// Unsupported means the operation is not supported.
	Unsupported
	// Unavailable means a transient failure; retrying later may succeed.
	Unavailable
	// Unprocessable means the request was well-formed but semantically contradictory.
	Unprocessable
)

var kindNames = [...]string{"internal", "invalid", "unauthenticated", "forbidden", "not found",
	"already exists", "not empty", "conflict", "indeterminate", "unsupported", "unavailable", "unprocessable"}

// String returns a short lower-case name of the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is the error type domain packages return. Msg is safe to show to
// clients; Err is logged but never sent.
type Error struct {
	Kind   Kind
	Entity string // "table", "namespace", "view", "warehouse", ... (may be empty)
	Msg    string
	Err    error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil && e.Msg != "" {
		return e.Msg + ": " + e.Err.Error()
	}
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Msg
}

// Unwrap returns the wrapped internal error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Kind, Entity and Msg,
// so that sentinel errors match with errors.Is.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Kind == e.Kind && t.Entity == e.Entity && (t.Msg == "" || t.Msg == e.Msg)
}

// E builds an *Error with a formatted public message.
func E(kind Kind, entity string, format string, args ...any) *Error {
	return &Error{Kind: kind, Entity: entity, Msg: fmt.Sprintf(format, args...)}
}

// Wrap builds an *Error of the given kind around err, keeping err for logs.
func Wrap(kind Kind, err error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Err: err}
}

// KindOf returns the Kind of the first *Error in err's chain, or Internal.
func KindOf(err error) Kind {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return Internal
}

// EntityOf returns the Entity of the first *Error in err's chain.
func EntityOf(err error) string {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Entity
	}
	return ""
}

// PublicMessage returns the client-safe message of err: the Msg of the first
// *Error in its chain, or "internal error" for anything else.
func PublicMessage(err error) string {
	var fe *Error
	if errors.As(err, &fe) && fe.Kind != Internal {
		if fe.Msg != "" {
			return fe.Msg
		}
	}
	return "internal error"
}
