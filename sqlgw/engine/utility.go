package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// utilityKind is a statement the engine answers itself, without DuckDB.
type utilityKind int

const (
	utilSet utilityKind = iota + 1
	utilReset
	utilShow
	utilBegin
	utilCommit
	utilRollback
	utilNoop  // accepted and ignored (SET TRANSACTION ..., DISCARD ...)
	utilEmpty // only comments or white space
)

// utility is a parsed utility statement.
type utility struct {
	kind  utilityKind
	name  string // setting name, lower case ("all" for SHOW ALL / RESET ALL)
	value string
	tag   string
}

// clientSettings are the settings a client may SET: they change how
// pgwire talks to it, never what DuckDB does.
var clientSettings = setOf("application_name", "datestyle", "timezone", "extra_float_digits", "client_encoding",
	"intervalstyle", "search_path", "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout",
	"client_min_messages", "standard_conforming_strings", "bytea_output", "lc_messages", "lc_monetary",
	"lc_numeric", "lc_time", "default_transaction_isolation", "transaction_isolation",
	"default_transaction_read_only", "transaction_read_only", "jit", "geqo", "join_collapse_limit",
	"max_parallel_workers_per_gather", "row_security", "synchronous_commit", "plan_cache_mode", "timezone_abbreviations")

// parseUtility recognises SET, RESET, SHOW and transaction statements. It
// takes untrusted input: anything it does not recognise goes to DuckDB's
// parser.
func parseUtility(sql string) (utility, bool) {
	s := strings.TrimSpace(skipSpace(sql))
	s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	if s == "" {
		return utility{kind: utilEmpty}, true
	}
	words := strings.Fields(s)
	kw := strings.ToUpper(words[0])
	rest := strings.TrimSpace(s[len(words[0]):])
	switch kw {
	case "BEGIN", "START":
		if kw == "START" && (len(words) < 2 || !strings.EqualFold(words[1], "TRANSACTION")) {
			return utility{}, false
		}
		return utility{kind: utilBegin, tag: "BEGIN"}, true
	case "COMMIT", "END":
		return utility{kind: utilCommit, tag: "COMMIT"}, true
	case "ROLLBACK", "ABORT":
		if len(words) > 1 && strings.EqualFold(words[1], "TO") {
			return utility{}, false
		}
		return utility{kind: utilRollback, tag: "ROLLBACK"}, true
	case "DISCARD":
		return utility{kind: utilNoop, tag: "DISCARD " + strings.ToUpper(rest)}, true
	case "SHOW":
		name := strings.ToLower(strings.Trim(rest, `"`))
		if strings.EqualFold(rest, "TIME ZONE") {
			name = "timezone"
		}
		if strings.EqualFold(strings.Join(strings.Fields(rest), " "), "TRANSACTION ISOLATION LEVEL") {
			name = "transaction_isolation" // SQLAlchemy asks on connect
		}
		if name == "" || strings.ContainsAny(name, " \t\n;,()'") {
			return utility{}, false
		}
		return utility{kind: utilShow, name: name}, true
	case "RESET":
		name := strings.ToLower(strings.Trim(rest, `"`))
		if name == "" || strings.ContainsAny(name, " \t\n;,()'") {
			return utility{}, false
		}
		return utility{kind: utilReset, name: name, tag: "RESET"}, true
	case "SET":
		return parseSet(rest)
	}
	return utility{}, false
}

// parseSet parses the part of a SET statement after SET.
func parseSet(rest string) (utility, bool) {
	words := strings.Fields(rest)
	if len(words) == 0 {
		return utility{}, false
	}
	if w := strings.ToUpper(words[0]); w == "SESSION" || w == "LOCAL" {
		if len(words) > 1 && strings.EqualFold(words[1], "CHARACTERISTICS") {
			return utility{kind: utilNoop, tag: "SET"}, true
		}
		rest = strings.TrimSpace(rest[len(words[0]):])
		words = words[1:]
		if len(words) == 0 {
			return utility{}, false
		}
	}
	if strings.EqualFold(words[0], "TRANSACTION") {
		return utility{kind: utilNoop, tag: "SET"}, true
	}
	var name, value string
	if len(words) >= 2 && strings.EqualFold(words[0], "TIME") && strings.EqualFold(words[1], "ZONE") {
		name = "timezone"
		value = strings.TrimSpace(rest[strings.Index(strings.ToUpper(rest), "ZONE")+4:])
	} else {
		i := strings.IndexAny(rest, " \t\n=")
		if i < 0 {
			return utility{}, false
		}
		name = strings.ToLower(strings.Trim(rest[:i], `"`))
		value = strings.TrimSpace(rest[i:])
		switch {
		case strings.HasPrefix(value, "="):
			value = strings.TrimSpace(value[1:])
		case len(value) >= 2 && strings.EqualFold(value[:2], "TO") && (len(value) == 2 || strings.ContainsRune(" \t\n'\"", rune(value[2]))):
			value = strings.TrimSpace(value[2:])
		default:
			return utility{}, false
		}
	}
	if name == "" || value == "" {
		return utility{}, false
	}
	if strings.EqualFold(value, "DEFAULT") || strings.EqualFold(value, "LOCAL") {
		return utility{kind: utilReset, name: name, tag: "SET"}, true
	}
	v, ok := settingValue(value)
	if !ok {
		return utility{}, false
	}
	return utility{kind: utilSet, name: name, value: v, tag: "SET"}, true
}

// settingValue reads a setting's value: a quoted string, a number or a
// word, or a comma-separated list of them (search_path).
func settingValue(v string) (string, bool) {
	var parts []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		switch {
		case len(p) >= 2 && p[0] == '\'' && p[len(p)-1] == '\'':
			inner := p[1 : len(p)-1]
			if strings.Contains(strings.ReplaceAll(inner, "''", ""), "'") {
				return "", false
			}
			parts = append(parts, strings.ReplaceAll(inner, "''", "'"))
		case len(p) >= 2 && p[0] == '"' && p[len(p)-1] == '"':
			parts = append(parts, p[1:len(p)-1])
		case p != "" && !strings.ContainsAny(p, " \t\n;'\"()"):
			parts = append(parts, p)
		default:
			return "", false
		}
	}
	return strings.Join(parts, ", "), true
}

// utility answers a utility statement.
func (ss *session) utility(u utility) (pgwire.Statement, error) {
	st := &staticStmt{}
	switch u.kind {
	case utilEmpty:
		st.run = func(context.Context) (pgwire.Result, error) { return &pgwire.StaticResult{CommandTag: ""}, nil }
	case utilBegin:
		st.run = func(context.Context) (pgwire.Result, error) {
			switch ss.pg.TxStatus() {
			case pgwire.TxFailed:
				return nil, errTxFailed
			case pgwire.TxIdle:
				ss.txn = newTxn(ss)
			}
			ss.pg.SetTxStatus(pgwire.TxInBlock)
			return &pgwire.StaticResult{CommandTag: "BEGIN"}, nil
		}
	case utilCommit, utilRollback:
		st.run = func(ctx context.Context) (pgwire.Result, error) {
			tag := u.tag
			t, status := ss.txn, ss.pg.TxStatus()
			ss.txn = nil
			ss.pg.SetTxStatus(pgwire.TxIdle)
			ss.savepoints = nil
			if status == pgwire.TxFailed || u.kind == utilRollback {
				ss.undoSchemas(ctx, t)
				return &pgwire.StaticResult{CommandTag: "ROLLBACK"}, nil
			}
			if t != nil && status == pgwire.TxInBlock {
				if err := ss.commitBlock(ctx, t); err != nil {
					return nil, err
				}
			}
			return &pgwire.StaticResult{CommandTag: tag}, nil
		}
	case utilNoop:
		st.run = func(context.Context) (pgwire.Result, error) {
			if strings.EqualFold(u.tag, "DISCARD ALL") {
				ss.room = ""
			}
			return &pgwire.StaticResult{CommandTag: u.tag}, nil
		}
	case utilSet, utilReset:
		if u.kind == utilReset && u.name == "all" {
			st.run = func(context.Context) (pgwire.Result, error) {
				ss.room = "" // a pooled connection leaves its collaboration
				return &pgwire.StaticResult{CommandTag: "RESET"}, nil
			}
			break
		}
		if u.name == collaborationSetting {
			st.run = func(ctx context.Context) (pgwire.Result, error) {
				if ss.pg.TxStatus() == pgwire.TxFailed {
					return nil, errTxFailed
				}
				if u.kind == utilReset {
					ss.room = ""
				} else if err := ss.setCollaboration(ctx, u.value); err != nil {
					return nil, err
				}
				return &pgwire.StaticResult{CommandTag: u.tag}, nil
			}
			break
		}
		if !clientSettings[u.name] {
			return nil, refused("setting %q cannot be changed through the SQL endpoint", u.name)
		}
		st.run = func(context.Context) (pgwire.Result, error) {
			if ss.pg.TxStatus() == pgwire.TxFailed {
				return nil, errTxFailed
			}
			if u.kind == utilSet {
				if err := ss.pg.SetSetting(u.name, u.value); err != nil {
					return nil, err
				}
			}
			return &pgwire.StaticResult{CommandTag: u.tag}, nil
		}
	case utilShow:
		if u.name == privacyBudgetSetting {
			st.cols = privacyBudgetColumns
			st.run = ss.showPrivacyBudget
			break
		}
		settings := ss.pg.Settings()
		if u.name == "all" {
			st.cols = []pgwire.Column{{Name: "name", TypeOID: pgwire.TextOID}, {Name: "setting", TypeOID: pgwire.TextOID}, {Name: "description", TypeOID: pgwire.TextOID}}
			names := make([]string, 0, len(settings))
			for k := range settings {
				names = append(names, k)
			}
			slices.Sort(names)
			var rows [][]any
			for _, k := range names {
				rows = append(rows, []any{k, settings[k], ""})
			}
			st.run = func(context.Context) (pgwire.Result, error) {
				return &pgwire.StaticResult{CommandTag: "SHOW", Rows: rows}, nil
			}
			break
		}
		v, ok := settings[u.name]
		if u.name == collaborationSetting {
			v, ok = ss.room, true
		}
		if !ok {
			switch u.name {
			case "transaction_isolation", "default_transaction_isolation":
				v, ok = "read committed", true
			case "server_version_num":
				v, ok = serverVersionNum(settings["server_version"]), true
			case "max_identifier_length":
				v, ok = "63", true
			case "search_path":
				v, ok = `"$user", public`, true
			}
		}
		if !ok {
			return nil, &pgwire.Error{Code: pgwire.CodeUndefinedObject, Message: fmt.Sprintf("unrecognized configuration parameter %q", u.name)}
		}
		st.cols = []pgwire.Column{{Name: u.name, TypeOID: pgwire.TextOID}}
		st.run = func(context.Context) (pgwire.Result, error) {
			return &pgwire.StaticResult{CommandTag: "SHOW", Rows: [][]any{{v}}}, nil
		}
	}
	return st, nil
}

// staticStmt is a statement answered without DuckDB.
type staticStmt struct {
	cols []pgwire.Column
	run  func(context.Context) (pgwire.Result, error)
}

// Params implements pgwire.Statement.
func (s *staticStmt) Params() []uint32 { return nil }

// Columns implements pgwire.Statement.
func (s *staticStmt) Columns() []pgwire.Column { return s.cols }

// Execute implements pgwire.Statement.
func (s *staticStmt) Execute(ctx context.Context, _ []any) (pgwire.Result, error) { return s.run(ctx) }

// Close implements pgwire.Statement.
func (s *staticStmt) Close() error { return nil }

// serverVersionNum is server_version_num of a server_version such as
// "16.0 (Floe)": 160000 (major * 10000 + minor).
func serverVersionNum(v string) string {
	var major, minor int
	if n, _ := fmt.Sscanf(v, "%d.%d", &major, &minor); n == 0 {
		return "160000"
	}
	return strconv.Itoa(major*10000 + minor)
}
