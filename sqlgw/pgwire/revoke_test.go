package pgwire

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-lake/floe"
)

// TestRevokedSessionEnds: once Identity.Revoked answers an error, an open
// session's next statement is refused with FATAL 28000 naming the reason,
// and the connection ends, in every query mode.
func TestRevokedSessionEnds(t *testing.T) {
	for _, mode := range execModes {
		t.Run(mode.String(), func(t *testing.T) {
			var revoked atomic.Bool
			ts := startServer(t)
			ts.auth.revoked = func() error {
				if revoked.Load() {
					return floe.E(floe.Forbidden, "credential", "credential revoked: token revoked")
				}
				return nil
			}
			ctx := context.Background()
			conn := ts.connect(t, "alice", "alice-token", withMode(mode))
			var n int
			if err := conn.QueryRow(ctx, "select 1").Scan(&n); err != nil {
				t.Fatal(err)
			}
			revoked.Store(true)
			err := conn.QueryRow(ctx, "select 1").Scan(&n)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != CodeInvalidAuthorization || pe.Severity != "FATAL" ||
				!strings.Contains(pe.Message, "credential revoked: token revoked") {
				t.Fatalf("statement after revocation: %v", err)
			}
			if err := conn.Ping(ctx); err == nil {
				t.Fatal("the connection still answers after the revocation")
			}
		})
	}
}

// TestNotRevokedSessionRuns: a session whose identity is not revoked runs
// its statements as before.
func TestNotRevokedSessionRuns(t *testing.T) {
	ts := startServer(t)
	calls := atomic.Int64{}
	ts.auth.revoked = func() error { calls.Add(1); return nil }
	conn := ts.connect(t, "alice", "alice-token", withMode(pgx.QueryExecModeSimpleProtocol))
	for range 3 {
		var n int
		if err := conn.QueryRow(context.Background(), "select 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() < 3 {
		t.Fatalf("Revoked was asked %d times for 3 statements", calls.Load())
	}
}
