package pgwire

import (
	"context"
	"io"
)

// Engine prepares SQL statements for a session. It is what the SQL engine
// (DuckDB with policy rewriting) implements; pgwire calls it from one
// goroutine per connection, so an Engine must be safe for concurrent use
// across sessions but sees each session's calls in order.
type Engine interface {
	// Prepare parses and plans one statement (pgwire has already split a
	// multi-statement simple query). paramOIDs holds the parameter types the
	// client declared, 0 where it left the type open; it may be shorter than
	// the statement's parameter list. Errors should be *Error values with a
	// SQLSTATE (42601 for syntax errors, 42P01 for unknown tables, ...).
	Prepare(ctx context.Context, s *Session, sql string, paramOIDs []uint32) (Statement, error)
}

// SessionHooks is an optional interface of an Engine. StartSession runs
// after authentication and before the client is told the login succeeded;
// an error ends the connection (as a FATAL error). EndSession runs once when
// the connection ends, after every Statement of the session is closed.
type SessionHooks interface {
	StartSession(ctx context.Context, s *Session) error
	EndSession(s *Session)
}

// Statement is a prepared statement. pgwire may Execute it several times,
// one Result at a time, and calls Close exactly once when the client closes
// the statement or the connection ends.
type Statement interface {
	// Params returns the type OIDs of the parameters $1..$n; pgwire reports
	// them to clients (ParameterDescription) and decodes arguments by them.
	Params() []uint32
	// Columns describes the result rows; nil for statements that return no
	// rows (INSERT, SET, BEGIN ...).
	Columns() []Column
	// Execute runs the statement with decoded arguments (see Encoding in the package doc for
	// their Go types in the package doc). ctx lives as long as the Result and is cancelled by
	// the client's CancelRequest or by server shutdown.
	Execute(ctx context.Context, args []any) (Result, error)
	// Close releases the statement.
	Close() error
}

// Result streams the rows of one execution.
type Result interface {
	// Next returns the next row, with one value per column, or io.EOF
	// after the last row. pgwire encodes the row before calling Next again,
	// so the slice may be reused.
	Next() ([]any, error)
	// Tag returns the command tag once Next has returned io.EOF, e.g.
	// "INSERT 0 1", "DELETE 3", "SET". A tag of exactly "SELECT" is
	// completed with the number of rows sent, as "SELECT 3".
	Tag() string
	// Close releases the result; pgwire may call it before the last row
	// (a portal closed early, a cancelled query).
	Close() error
}

// Column describes one result column.
type Column struct {
	Name    string
	TypeOID uint32
	// TypeMod is the type modifier (e.g. varchar length + 4); 0 is taken
	// as -1, "none".
	TypeMod int32
	// TableOID and AttrNum name the source column when there is one; tools
	// use them for introspection. Zero means none.
	TableOID uint32
	AttrNum  uint16
}

// StaticResult is a Result over rows held in memory; engines use it for
// small answers (SHOW, SET, catalog queries).
type StaticResult struct {
	// CommandTag is returned by Tag ("SELECT" is completed with the count).
	CommandTag string
	// Rows are returned in order by Next.
	Rows [][]any

	next int
}

// Next returns the next row or io.EOF.
func (r *StaticResult) Next() ([]any, error) {
	if r.next >= len(r.Rows) {
		return nil, io.EOF
	}
	r.next++
	return r.Rows[r.next-1], nil
}

// Tag returns CommandTag.
func (r *StaticResult) Tag() string { return r.CommandTag }

// Close does nothing.
func (r *StaticResult) Close() error { return nil }

// Identity is the authenticated caller of a session. pgwire reads only
// Principal; Payload carries what the Authenticator knows about the caller
// (token claims, roles) through to the Engine untouched.
type Identity struct {
	// Principal is the principal's name; it equals the session's user.
	Principal string
	// Method is how the caller logged in, AuthSCRAM or AuthToken; pgwire
	// sets it.
	Method string
	// Payload is the Authenticator's data for the Engine.
	Payload any
	// Revoked, if set, is asked before each statement (Query, Parse, Bind,
	// Execute): a non-nil error, such as a revoked token or a disabled
	// principal, ends the session with a FATAL ErrorResponse of SQLSTATE
	// 28000 carrying the error's public message. It runs per statement: it
	// must be cheap (revoke.List answers from memory).
	Revoked func() error
	// AllowedCIDRs is the principal's network allowlist (canonical CIDR
	// prefixes); pgwire refuses the login from any other address with
	// SQLSTATE 28000 once the password checked out. Empty: any address.
	AllowedCIDRs []string
}

// Authentication methods recorded in Identity.Method.
const (
	AuthSCRAM = "scram-sha-256"
	AuthToken = "token"
)

var _ Result = (*StaticResult)(nil)
