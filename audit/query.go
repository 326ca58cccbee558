package audit

import (
	"strings"
	"time"

	"github.com/floe-lake/floe"
)

// Query selects audit records. Zero fields match everything.
type Query struct {
	// Principal matches the principal name exactly.
	Principal string
	// Action matches the action exactly or, when it ends in "*", by the
	// prefix before the "*" ("oauth.*", "s3.Get*").
	Action string
	// Resource matches resources that start with it ("table:floe/crm.").
	Resource string
	// Outcome matches the outcome exactly.
	Outcome string
	// RequestID matches the request id exactly.
	RequestID string
	// Since and Until bound the record time: Since <= time < Until.
	Since, Until time.Time
	// After and Before bound the seq: After < seq < Before (0: unbounded).
	After, Before int64
	// Newest returns the newest matching records first; otherwise the
	// oldest come first.
	Newest bool
	// Limit bounds the result (default DefaultQueryLimit, at most MaxQueryLimit).
	Limit int
}

// Query limits.
const (
	DefaultQueryLimit = 100
	MaxQueryLimit     = 100_000
)

// ActionPrefix reports the prefix an action filter ending in "*" selects.
func (q Query) ActionPrefix() (prefix string, ok bool) {
	return strings.CutSuffix(q.Action, "*")
}

// Normalize checks q and fills in the default limit.
func (q Query) Normalize() (Query, error) {
	switch {
	case q.Limit < 0 || q.Limit > MaxQueryLimit:
		return q, floe.E(floe.Invalid, "audit", "limit %d: must be between 1 and %d", q.Limit, MaxQueryLimit)
	case q.After < 0 || q.Before < 0:
		return q, floe.E(floe.Invalid, "audit", "seq bounds must not be negative")
	case !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until):
		return q, floe.E(floe.Invalid, "audit", "since (%s) must be before until (%s)", q.Since.Format(time.RFC3339), q.Until.Format(time.RFC3339))
	case strings.Contains(strings.TrimSuffix(q.Action, "*"), "*"):
		return q, floe.E(floe.Invalid, "audit", "action %q: only a trailing * is supported", q.Action)
	}
	if q.Limit == 0 {
		q.Limit = DefaultQueryLimit
	}
	return q, nil
}
