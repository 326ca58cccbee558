package pgwire

import (
	"errors"

	"github.com/floe-lake/floe"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Error is an error with a SQLSTATE, sent to the client as an ErrorResponse
// (or a NoticeResponse through Session.Notice). Engines return it for every
// error the client should see as is.
type Error struct {
	// Severity is ERROR when empty (NOTICE for notices); FATAL ends the
	// connection after the message is sent.
	Severity string
	// Code is the SQLSTATE, e.g. "42P01"; XX000 when empty.
	Code    string
	Message string
	Detail  string
	Hint    string
	// Position is the 1-based character position of the error in the
	// statement text, 0 for none.
	Position int32
	// Err is a wrapped cause for logs; it is never sent to the client.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	s := e.Code + " " + e.Message
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the wrapped cause.
func (e *Error) Unwrap() error { return e.Err }

// SQLSTATE codes pgwire uses or maps to (see PostgreSQL's errcodes.txt).
const (
	CodeSuccessfulCompletion        = "00000"
	CodeWarning                     = "01000"
	CodeFeatureNotSupported         = "0A000"
	CodeProtocolViolation           = "08P01"
	CodeConnectionFailure           = "08006"
	CodeDataException               = "22000"
	CodeInvalidParameterValue       = "22023"
	CodeInvalidTextRepresentation   = "22P02"
	CodeInvalidBinaryRepresentation = "22P03"
	CodeNumericValueOutOfRange      = "22003"
	CodeInvalidDatetimeFormat       = "22007"
	CodeInvalidTransactionState     = "25000"
	CodeInFailedTransaction         = "25P02"
	CodeInvalidAuthorization        = "28000"
	CodeInvalidPassword             = "28P01"
	CodeInvalidCursorName           = "34000"
	CodeInvalidStatementName        = "26000"
	CodeSerializationFailure        = "40001"
	CodeStatementCompletionUnknown  = "40003"
	CodeSyntaxError                 = "42601"
	CodeInsufficientPrivilege       = "42501"
	CodeUndefinedParameter          = "42P02"
	CodeUndefinedTable              = "42P01"
	CodeUndefinedObject             = "42704"
	CodeDuplicateTable              = "42P07"
	CodeDuplicateObject             = "42710"
	CodeDuplicatePreparedStatement  = "42P05"
	CodeDependentObjectsExist       = "2BP01"
	CodeInsufficientResources       = "53000"
	CodeTooManyConnections          = "53300"
	CodeProgramLimitExceeded        = "54000"
	CodeQueryCanceled               = "57014"
	CodeAdminShutdown               = "57P01"
	CodeCannotConnectNow            = "57P03"
	CodeIdleSessionTimeout          = "57P05"
	CodeCantChangeRuntimeParam      = "55P02"
	CodeInternalError               = "XX000"
	// CodeLoginThrottled refuses a login while its user has used up its
	// failed attempts from the client's address
	// (sqlserver_rejected_establishment_of_sqlconnection).
	CodeLoginThrottled = "08004"
)

var (
	errBadZone       = errors.New("unknown time zone")
	errQueryCanceled = errors.New("query canceled by cancel request")
	errShutdown      = errors.New("server shutting down")
	// errEvicted ends a connection that waited to authenticate while newer
	// ones arrived beyond a cap (see Options.MaxUnauthenticated).
	errEvicted = errors.New("evicted while waiting to authenticate")
	// errStatementTimeout cancels a statement that ran past its
	// statement_timeout (or Options.MaxStatementTimeout).
	errStatementTimeout = errors.New("statement timeout")
)

// kindCodes maps floe error kinds to SQLSTATEs.
var kindCodes = map[floe.Kind]string{
	floe.Invalid:         CodeInvalidParameterValue,
	floe.Unauthenticated: CodeInvalidAuthorization,
	floe.Forbidden:       CodeInsufficientPrivilege,
	floe.NotFound:        CodeUndefinedObject,
	floe.AlreadyExists:   CodeDuplicateObject,
	floe.NotEmpty:        CodeDependentObjectsExist,
	floe.Conflict:        CodeSerializationFailure,
	floe.Indeterminate:   CodeStatementCompletionUnknown,
	floe.Unsupported:     CodeFeatureNotSupported,
	floe.Unavailable:     CodeInsufficientResources,
	floe.Unprocessable:   CodeDataException,
}

// publicError turns any error into what the client may see; internal
// reports whether err carried no public form (and must be logged).
func publicError(err error) (e *Error, internal bool) {
	var pe *Error
	if errors.As(err, &pe) {
		if pe.Code == "" {
			c := *pe
			c.Code = CodeInternalError
			return &c, false
		}
		return pe, false
	}
	var fe *floe.Error
	if errors.As(err, &fe) && fe.Kind != floe.Internal {
		code := kindCodes[fe.Kind]
		if code == "" {
			code = CodeInternalError
		}
		if fe.Kind == floe.NotFound && fe.Entity == "table" {
			code = CodeUndefinedTable
		}
		if fe.Kind == floe.AlreadyExists && fe.Entity == "table" {
			code = CodeDuplicateTable
		}
		return &Error{Code: code, Message: floe.PublicMessage(err)}, false
	}
	return &Error{Code: CodeInternalError, Message: "internal error"}, true
}

// errorResponse encodes e; severity defaults to def.
func (e *Error) response(def string) *pgproto3.ErrorResponse {
	sev := e.Severity
	if sev == "" {
		sev = def
	}
	code := e.Code
	if code == "" {
		code = CodeInternalError
	}
	return &pgproto3.ErrorResponse{
		Severity:            sev,
		SeverityUnlocalized: sev,
		Code:                code,
		Message:             e.Message,
		Detail:              e.Detail,
		Hint:                e.Hint,
		Position:            e.Position,
	}
}

func fatal(code, msg string) *Error { return &Error{Severity: "FATAL", Code: code, Message: msg} }
