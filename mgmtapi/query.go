package mgmtapi

import (
	"context"
	"errors"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/sqlgw/httpquery"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// Querier runs one SQL statement for POST /api/v1/query on the SQL
// engine, as the caller (claims; nil when authentication is off), with
// the same policies as the SQL endpoint, in q.Collaboration when it names
// one (the clean-room checks of SET floe.collaboration). remote is the
// client's address.
type Querier func(ctx context.Context, claims *auth.Claims, remote string, q httpquery.Request) (httpquery.Rows, error)

// query serves POST /api/v1/query: the statement's result streamed as
// NDJSON, CSV or Arrow IPC (see package httpquery). The engine audits the
// statement (sql.query, with this request's id).
func (h *Handler) query(c *call) error {
	if h.opts.Query == nil {
		return floe.E(floe.Unsupported, "query", "the SQL engine is off on this server (sql_listen is off)")
	}
	q, err := httpquery.Decode(c.r)
	if err != nil {
		return err
	}
	rows, err := h.opts.Query(c.ctx, c.claims, c.r.RemoteAddr, q)
	if err != nil {
		return sqlError(err)
	}
	defer rows.Close()
	st, err := httpquery.Write(c.ctx, c.w, q.Format, rows)
	if st.Streaming {
		if err != nil {
			h.log.InfoContext(c.ctx, "mgmtapi: query ended with an error after streaming began", "request_id", c.rid, "err", err)
		}
		return nil // the stream itself reports it (trailer Floe-Error)
	}
	return sqlError(err)
}

// sqlError maps an engine error to the API's error kinds by SQLSTATE
// class, keeping the SQLSTATE in the message.
func sqlError(err error) error {
	var pe *pgwire.Error
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	kind := floe.Invalid
	switch {
	case pe.Code == pgwire.CodeInsufficientPrivilege || strings.HasPrefix(pe.Code, "28"):
		kind = floe.Forbidden
	case pe.Code == "42P01" || pe.Code == "42704" || pe.Code == "3F000":
		kind = floe.NotFound
	case pe.Code == pgwire.CodeFeatureNotSupported:
		kind = floe.Unsupported
	case strings.HasPrefix(pe.Code, "XX") || strings.HasPrefix(pe.Code, "53") || strings.HasPrefix(pe.Code, "58"):
		return floe.Wrap(floe.Internal, err, "internal error (SQLSTATE %s)", pe.Code)
	}
	return floe.Wrap(kind, err, "%s (SQLSTATE %s)", pe.Message, pe.Code)
}
