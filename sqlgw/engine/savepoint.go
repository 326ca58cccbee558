package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// Drivers take savepoints of their own inside a transaction: psycopg
// (SQLAlchemy's default PostgreSQL driver) wraps its type lookups in
// SAVEPOINT ... RELEASE SAVEPOINT. The endpoint accepts SAVEPOINT and
// RELEASE SAVEPOINT, which change nothing in what the transaction does;
// ROLLBACK TO SAVEPOINT, which would have to undo part of it, is refused
// (roll the whole transaction back instead).

// maxSavepoints bounds the savepoints a session holds at once.
const maxSavepoints = 64

// savepointKind is a savepoint statement.
type savepointKind int

const (
	spSet savepointKind = iota + 1
	spRelease
	spRollbackTo
)

// savepointStmt is a parsed savepoint statement.
type savepointStmt struct {
	kind savepointKind
	name string // lower case unless quoted
}

// parseSavepoint recognises SAVEPOINT name, RELEASE [SAVEPOINT] name and
// ROLLBACK [WORK|TRANSACTION] TO [SAVEPOINT] name. It takes untrusted input.
func parseSavepoint(sql string) (savepointStmt, bool) {
	s := strings.TrimSpace(skipSpace(sql))
	s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	w := strings.Fields(s)
	upper := func(i int) string {
		if i < len(w) {
			return strings.ToUpper(w[i])
		}
		return ""
	}
	var st savepointStmt
	i := 0
	switch upper(0) {
	case "SAVEPOINT":
		st.kind, i = spSet, 1
	case "RELEASE":
		st.kind, i = spRelease, 1
		if upper(1) == "SAVEPOINT" {
			i = 2
		}
	case "ROLLBACK", "ABORT":
		i = 1
		if upper(1) == "WORK" || upper(1) == "TRANSACTION" {
			i = 2
		}
		if upper(i) != "TO" {
			return st, false
		}
		st.kind, i = spRollbackTo, i+1
		if upper(i) == "SAVEPOINT" {
			i++
		}
	default:
		return st, false
	}
	if len(w) != i+1 {
		return st, false
	}
	name := w[i]
	if len(name) >= 2 && name[0] == '"' && name[len(name)-1] == '"' {
		name = name[1 : len(name)-1]
	} else {
		name = strings.ToLower(name)
	}
	if name == "" || strings.ContainsAny(name, "\"';(),") {
		return st, false
	}
	st.name = name
	return st, true
}

// savepoint answers a savepoint statement.
func (ss *session) savepoint(sp savepointStmt) (pgwire.Statement, error) {
	return &savepointRun{ss: ss, sp: sp}, nil
}

// savepointRun is a prepared savepoint statement.
type savepointRun struct {
	ss *session
	sp savepointStmt
}

// Params implements pgwire.Statement.
func (r *savepointRun) Params() []uint32 { return nil }

// Columns implements pgwire.Statement.
func (r *savepointRun) Columns() []pgwire.Column { return nil }

// Close implements pgwire.Statement.
func (r *savepointRun) Close() error { return nil }

// Execute implements pgwire.Statement.
func (r *savepointRun) Execute(context.Context, []any) (pgwire.Result, error) {
	ss, sp := r.ss, r.sp
	switch ss.pg.TxStatus() {
	case pgwire.TxIdle:
		ss.savepoints = nil
		what := map[savepointKind]string{spSet: "SAVEPOINT", spRelease: "RELEASE SAVEPOINT", spRollbackTo: "ROLLBACK TO SAVEPOINT"}[sp.kind]
		return nil, &pgwire.Error{Code: "25P01", Message: what + " can only be used in transaction blocks"}
	case pgwire.TxFailed:
		if sp.kind != spRollbackTo {
			return nil, errTxFailed
		}
	}
	switch sp.kind {
	case spSet:
		if len(ss.savepoints) >= maxSavepoints {
			return nil, &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded, Message: fmt.Sprintf("a transaction holds at most %d savepoints", maxSavepoints)}
		}
		ss.savepoints = append(ss.savepoints, sp.name)
		return &pgwire.StaticResult{CommandTag: "SAVEPOINT"}, nil
	case spRelease:
		i := -1
		for j := len(ss.savepoints) - 1; j >= 0 && i < 0; j-- { // the newest of that name
			if ss.savepoints[j] == sp.name {
				i = j
			}
		}
		if i < 0 {
			return nil, &pgwire.Error{Code: "3B001", Message: fmt.Sprintf("savepoint %q does not exist", sp.name)}
		}
		ss.savepoints = ss.savepoints[:i]
		return &pgwire.StaticResult{CommandTag: "RELEASE"}, nil
	}
	return nil, unsupported("ROLLBACK TO SAVEPOINT is not supported: roll the whole transaction back (ROLLBACK)")
}
