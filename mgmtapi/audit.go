package mgmtapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
)

// AuditReader reads and verifies the audit log for GET /api/v1/audit and
// GET /api/v1/audit/verify.
type AuditReader interface {
	AuditQuery(ctx context.Context, q audit.Query) ([]audit.Record, error)
	VerifyChain(ctx context.Context) (audit.VerifyResult, error)
}

// MaxAuditPage bounds the records one GET /api/v1/audit answers.
const MaxAuditPage = 500

// AuditRecord is one audit record as the API shows it.
type AuditRecord struct {
	Seq        int64           `json:"seq"`
	Time       string          `json:"time"`
	RequestID  string          `json:"request_id"`
	Principal  string          `json:"principal"`
	ClientAddr string          `json:"client_addr"`
	Action     string          `json:"action"`
	Resource   string          `json:"resource"`
	Outcome    string          `json:"outcome"`
	Detail     json.RawMessage `json:"detail"`
	Hash       string          `json:"hash"`
}

// AuditPage is the answer of GET /api/v1/audit: records newest first;
// More says older records match (ask again with before = the last seq).
type AuditPage struct {
	Records []AuditRecord `json:"records"`
	More    bool          `json:"more"`
}

// AuditVerification is the answer of GET /api/v1/audit/verify.
type AuditVerification struct {
	OK      bool   `json:"ok"`
	Records int64  `json:"records"`
	First   int64  `json:"first"`
	Last    int64  `json:"last"`
	Head    string `json:"head,omitempty"`
	Error   string `json:"error,omitempty"`
	// Pruned says the walk started from a signed checkpoint.
	Pruned bool `json:"pruned"`
}

func (h *Handler) auditRoutes() []route {
	const p = "/api/v1/audit"
	return []route{
		{"GET", p, "", h.listAudit},
		{"GET", p + "/verify", "", h.verifyAudit},
	}
}

// auditQuery reads the filters of GET /api/v1/audit.
func auditQuery(c *call) (audit.Query, error) {
	v := c.r.URL.Query()
	q := audit.Query{Principal: v.Get("principal"), Action: v.Get("action"), Resource: v.Get("resource"),
		Outcome: v.Get("outcome"), RequestID: v.Get("request_id"), Newest: true, Limit: 100}
	for name, dst := range map[string]*time.Time{"since": &q.Since, "until": &q.Until} {
		if s := v.Get(name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return q, floe.E(floe.Invalid, "audit", "%s %q: want an RFC 3339 time", name, s)
			}
			*dst = t
		}
	}
	for name, dst := range map[string]*int{"limit": &q.Limit} {
		if s := v.Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > MaxAuditPage {
				return q, floe.E(floe.Invalid, "audit", "%s %q: want a number from 1 to %d", name, s, MaxAuditPage)
			}
			*dst = n
		}
	}
	if s := v.Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return q, floe.E(floe.Invalid, "audit", "before %q: want a positive seq", s)
		}
		q.Before = n
	}
	return q.Normalize()
}

// listAudit serves GET /api/v1/audit (administrators: the log names every
// principal's actions).
func (h *Handler) listAudit(c *call) error {
	if err := requireAdmin(c.sub, "reading the audit log"); err != nil {
		return err
	}
	if h.opts.AuditLog == nil {
		return floe.E(floe.Unsupported, "audit", "the audit log cannot be read on this server")
	}
	q, err := auditQuery(c)
	if err != nil {
		return err
	}
	want := q.Limit
	q.Limit++
	rs, err := h.opts.AuditLog.AuditQuery(c.ctx, q)
	if err != nil {
		return err
	}
	page := AuditPage{Records: []AuditRecord{}, More: len(rs) > want}
	for _, r := range rs[:min(len(rs), want)] {
		d := json.RawMessage(r.Detail)
		if len(d) == 0 {
			d = json.RawMessage("{}")
		} else if !json.Valid(d) {
			b, _ := json.Marshal(string(r.Detail))
			d = b
		}
		page.Records = append(page.Records, AuditRecord{Seq: r.Seq, Time: r.Time.UTC().Format("2006-01-02T15:04:05.000000Z"),
			RequestID: r.RequestID, Principal: r.Principal, ClientAddr: r.ClientAddr, Action: r.Action, Resource: r.Resource,
			Outcome: r.Outcome, Detail: d, Hash: r.Hash})
	}
	return reply(c, http.StatusOK, page)
}

// verifyAudit serves GET /api/v1/audit/verify: the chain walked now.
func (h *Handler) verifyAudit(c *call) error {
	if err := requireAdmin(c.sub, "verifying the audit log"); err != nil {
		return err
	}
	if h.opts.AuditLog == nil {
		return floe.E(floe.Unsupported, "audit", "the audit log cannot be read on this server")
	}
	res, err := h.opts.AuditLog.VerifyChain(c.ctx)
	out := AuditVerification{OK: err == nil, Records: res.Records, First: res.First, Last: res.Last, Head: res.Head,
		Pruned: res.Checkpoint != nil}
	if err != nil {
		if !errors.Is(err, audit.ErrTampered) {
			return err
		}
		out.Error = err.Error()
	}
	return reply(c, http.StatusOK, out)
}
