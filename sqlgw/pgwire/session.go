package pgwire

import (
	"errors"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TxStatus is the transaction status reported in ReadyForQuery.
type TxStatus byte

// Transaction states. The Engine owns transactions: it sets TxInBlock on
// BEGIN and TxIdle on COMMIT/ROLLBACK. pgwire sets TxFailed itself when it
// reports an error while the status is TxInBlock, as PostgreSQL aborts the
// transaction then; the Engine should refuse statements other than
// ROLLBACK in that state (SQLSTATE 25P02).
const (
	TxIdle    TxStatus = 'I'
	TxInBlock TxStatus = 'T'
	TxFailed  TxStatus = 'E'
)

// reported lists the settings PostgreSQL reports with ParameterStatus (the
// GUC_REPORT ones), by lower-case name, with their canonical spelling.
var reported = map[string]string{
	"server_version":                "server_version",
	"server_encoding":               "server_encoding",
	"client_encoding":               "client_encoding",
	"application_name":              "application_name",
	"datestyle":                     "DateStyle",
	"intervalstyle":                 "IntervalStyle",
	"timezone":                      "TimeZone",
	"integer_datetimes":             "integer_datetimes",
	"standard_conforming_strings":   "standard_conforming_strings",
	"is_superuser":                  "is_superuser",
	"session_authorization":         "session_authorization",
	"default_transaction_read_only": "default_transaction_read_only",
	"in_hot_standby":                "in_hot_standby",
}

// readOnly lists settings a session may not change once pgwire set them.
var readOnly = map[string]bool{
	"server_version":        true,
	"server_encoding":       true,
	"integer_datetimes":     true,
	"is_superuser":          true,
	"session_authorization": true,
	"in_hot_standby":        true,
}

// Session is one authenticated connection. pgwire creates it after login
// and hands it to every Engine call. Its exported fields are fixed after
// login; settings, transaction status and notices are safe for concurrent
// use.
type Session struct {
	// ID identifies the connection in logs.
	ID uint64
	// ProcessID is the process id the client was given in BackendKeyData.
	ProcessID uint32
	// Identity is the authenticated caller.
	Identity Identity
	// User and Database are from the startup message.
	User     string
	Database string
	// RemoteAddr is the client's address.
	RemoteAddr net.Addr
	// TLS reports whether the connection is encrypted.
	TLS bool
	// State is the Engine's per-session data (set it in StartSession);
	// pgwire never touches it.
	State any

	mu       sync.Mutex
	settings map[string]string // by lower-case name
	tx       TxStatus
	loc      *time.Location
	notices  []*Error
	sent     map[string]string // reported values last sent to the client
	timeout  time.Duration     // statement_timeout; 0: none
}

// NewSession returns a session for a front end other than the wire
// protocol (the HTTP query API) that drives an Engine itself: it calls the
// Engine's SessionHooks, Prepare and Execute as a connection would.
func NewSession(id Identity, database string, remote net.Addr) *Session {
	s := newSession()
	s.Identity, s.User, s.Database, s.RemoteAddr = id, id.Principal, database, remote
	return s
}

func newSession() *Session {
	return &Session{settings: map[string]string{}, tx: TxIdle, loc: time.UTC, sent: map[string]string{}}
}

// Setting returns the value of a setting (names are case-insensitive).
func (s *Session) Setting(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.settings[strings.ToLower(name)]
	return v, ok
}

// Settings returns a copy of all settings by lower-case name.
func (s *Session) Settings() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]string, len(s.settings))
	for k, v := range s.settings {
		m[k] = v
	}
	return m
}

// SetSetting changes a setting, as SET does; the Engine calls it and
// pgwire reports changes of reported settings (TimeZone, DateStyle,
// application_name ...) to the client with ParameterStatus. pgwire
// validates the settings its encoding depends on: client_encoding must be
// UTF8, DateStyle must be ISO, TimeZone must be a known IANA zone name, and
// server-controlled settings are read-only. Errors are *Error values.
func (s *Session) SetSetting(name, value string) error {
	key := strings.ToLower(name)
	v, loc, err := checkSetting(key, value)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, set := s.settings[key]; set && readOnly[key] && old != v {
		return &Error{Code: CodeCantChangeRuntimeParam, Message: "parameter \"" + key + "\" cannot be changed"}
	}
	s.settings[key] = v
	if loc != nil {
		s.loc = loc
	}
	if key == "statement_timeout" {
		s.timeout, _ = parseTimeout(v)
	}
	return nil
}

// StatementTimeout returns the session's statement_timeout; 0 means none
// (pgwire then applies Options.MaxStatementTimeout alone).
func (s *Session) StatementTimeout() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.timeout
}

// maxTimeout is PostgreSQL's bound of statement_timeout (INT_MAX ms).
const maxTimeout = math.MaxInt32 * time.Millisecond

// timeoutUnits are the units of a statement_timeout value, as PostgreSQL
// reads them; a bare number is milliseconds.
var timeoutUnits = map[string]time.Duration{
	"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second,
	"min": time.Minute, "h": time.Hour, "d": 24 * time.Hour,
}

// parseTimeout reads a statement_timeout value ("100", "100ms", "1.5 s",
// "5min", ...), rounded to milliseconds.
func parseTimeout(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != '-' && r != '+' })
	if i < 0 {
		i = len(v)
	}
	n, err := strconv.ParseFloat(v[:i], 64)
	unit, ok := timeoutUnits[strings.TrimSpace(v[i:])]
	if err != nil || !ok || math.IsNaN(n) {
		return 0, errBadTimeout
	}
	ms := math.Round(n * float64(unit) / float64(time.Millisecond))
	if ms < 0 || ms > float64(maxTimeout/time.Millisecond) {
		return 0, errBadTimeout
	}
	return time.Duration(ms) * time.Millisecond, nil
}

var errBadTimeout = errors.New("invalid statement_timeout")

// formatTimeout shows a timeout as PostgreSQL does: in the largest unit
// that holds it exactly.
func formatTimeout(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"min", time.Minute}, {"s", time.Second}} {
		if d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// checkSetting normalizes the settings pgwire depends on.
func checkSetting(key, value string) (string, *time.Location, error) {
	switch key {
	case "client_encoding":
		switch strings.ToUpper(strings.ReplaceAll(value, "-", "")) {
		case "UTF8", "UNICODE", "SQL_ASCII":
			return "UTF8", nil, nil
		}
		return "", nil, &Error{Code: CodeInvalidParameterValue,
			Message: "invalid value for parameter \"client_encoding\": \"" + value + "\"",
			Hint:    "Floe supports only the UTF8 client encoding."}
	case "datestyle":
		order := "MDY"
		for _, f := range strings.FieldsFunc(strings.ToUpper(value), func(r rune) bool { return r == ',' || r == ' ' }) {
			switch f {
			case "ISO":
			case "MDY", "DMY", "YMD", "US", "NONEURO", "NONEUROPEAN":
				if f == "DMY" || f == "YMD" {
					order = f
				}
			case "EURO", "EUROPEAN":
				order = "DMY"
			default:
				return "", nil, &Error{Code: CodeInvalidParameterValue,
					Message: "invalid value for parameter \"DateStyle\": \"" + value + "\"",
					Hint:    "Floe supports only the ISO output style."}
			}
		}
		return "ISO, " + order, nil, nil
	case "timezone":
		loc, err := loadZone(value)
		if err != nil {
			return "", nil, &Error{Code: CodeInvalidParameterValue,
				Message: "invalid value for parameter \"TimeZone\": \"" + value + "\""}
		}
		return loc.String(), loc, nil
	case "statement_timeout":
		d, err := parseTimeout(value)
		if err != nil {
			return "", nil, &Error{Code: CodeInvalidParameterValue,
				Message: "invalid value for parameter \"statement_timeout\": \"" + value + "\"",
				Hint:    "Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\"; the range is 0 to 2147483647 ms."}
		}
		return formatTimeout(d), nil, nil
	case "standard_conforming_strings":
		if !strings.EqualFold(value, "on") && !strings.EqualFold(value, "true") {
			return "", nil, &Error{Code: CodeFeatureNotSupported, Message: "standard_conforming_strings cannot be turned off"}
		}
		return "on", nil, nil
	}
	return value, nil, nil
}

func loadZone(name string) (*time.Location, error) {
	switch strings.ToUpper(name) {
	case "UTC", "Z", "ZULU", "GMT", "UCT", "ETC/UTC", "ETC/GMT":
		return time.UTC, nil
	}
	if name == "" || strings.EqualFold(name, "local") || strings.EqualFold(name, "localtime") {
		return nil, errBadZone
	}
	// POSIX-style offsets as pgJDBC sends them: "GMT-01:00" is one hour
	// east of Greenwich (the sign is inverted).
	if len(name) > 4 && (strings.EqualFold(name[:3], "GMT") || strings.EqualFold(name[:3], "UTC")) &&
		(name[3] == '+' || name[3] == '-') {
		h, m, ok := strings.Cut(name[4:], ":")
		hh, err1 := strconv.Atoi(h)
		mm, err2 := 0, error(nil)
		if ok {
			mm, err2 = strconv.Atoi(m)
		}
		if err1 != nil || err2 != nil || hh > 15 || mm > 59 || hh < 0 || mm < 0 || len(h) > 2 {
			return nil, errBadZone
		}
		off := hh*3600 + mm*60
		if name[3] == '+' {
			off = -off
		}
		return time.FixedZone(name, off), nil
	}
	return time.LoadLocation(name)
}

// Location returns the session's time zone, used to print timestamptz
// values in text format.
func (s *Session) Location() *time.Location {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loc
}

// TxStatus returns the transaction status.
func (s *Session) TxStatus() TxStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tx
}

// SetTxStatus sets the transaction status reported in ReadyForQuery.
func (s *Session) SetTxStatus(t TxStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tx = t
}

// Notice queues a NoticeResponse (severity NOTICE unless set, e.g.
// WARNING); pgwire sends it before the statement's completion.
func (s *Session) Notice(n *Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notices = append(s.notices, n)
}

// takeNotices returns and clears the queued notices.
func (s *Session) takeNotices() []*Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.notices
	s.notices = nil
	return n
}

// changedReported returns the reported settings whose values differ from
// what the client last heard, in name order, and records them as sent.
func (s *Session) changedReported() [][2]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][2]string
	for key, canon := range reported {
		v, ok := s.settings[key]
		if !ok {
			continue
		}
		if old, was := s.sent[key]; was && old == v {
			continue
		}
		s.sent[key] = v
		out = append(out, [2]string{canon, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
