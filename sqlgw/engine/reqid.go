package engine

import (
	"context"
	"fmt"
)

type requestIDKey struct{}

// WithRequestID returns ctx carrying the request id of the front end that
// runs a statement (the HTTP query API); the statement's audit event takes
// it. Without one, events are named "sql-<session>-<n>".
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// requestID is the audit request id of a statement run with ctx.
func (ss *session) requestID(ctx context.Context) string {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok && id != "" {
		return id
	}
	return fmt.Sprintf("sql-%d-%d", ss.pg.ID, ss.e.queries.Add(1))
}
