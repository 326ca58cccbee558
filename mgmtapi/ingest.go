package mgmtapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake/ingest"
)

// Ingester loads data into tables (internal/app wires lake/ingest's
// Service and Streamer behind it).
type Ingester interface {
	Ingest(ctx context.Context, req ingest.Request, body io.Reader) (ingest.Result, error)
	AddFiles(ctx context.Context, req ingest.AddFilesRequest) (ingest.Result, error)
	RegisterDelta(ctx context.Context, req ingest.DeltaRequest) (ingest.Result, error)
	Stream(ctx context.Context, req ingest.StreamRequest, body io.Reader) (ingest.StreamResult, error)
}

// AddFilesRequest is the body of POST .../add-files.
type AddFilesRequest struct {
	Paths []string `json:"paths"`
}

// RegisterDeltaRequest is the body of POST .../register-delta.
type RegisterDeltaRequest struct {
	Location string `json:"location"`
}

// ingestRoutes are the data-loading operations (see ingest.go).
func (h *Handler) ingestRoutes() []route {
	const p = "/api/v1/tables/{warehouse}/{namespace}/{table}"
	return []route{
		{"POST", p + "/ingest", "mgmt.table.ingest", h.ingestTable},
		{"POST", p + "/stream", "mgmt.table.stream", h.streamTable},
		{"POST", p + "/add-files", "mgmt.table.add_files", h.addFiles},
		{"POST", p + "/register-delta", "mgmt.table.register_delta", h.registerDelta},
	}
}

// ingestTarget reads the table of an ingest path, records it as the audit
// resource and checks that ingest is available.
func (h *Handler) ingestTarget(c *call) (string, catalog.Ident, error) {
	wh := c.r.PathValue("warehouse")
	id := catalog.Ident{Namespace: ParseNamespace(c.r.PathValue("namespace")), Name: c.r.PathValue("table")}
	if err := id.Validate(); err != nil {
		return "", catalog.Ident{}, err
	}
	c.resource = AuditResource(authz.Table(wh, id))
	if h.opts.Ingest == nil {
		return "", catalog.Ident{}, floe.E(floe.Unsupported, "", "ingest is not available on this server")
	}
	return wh, id, nil
}

// require checks that the caller holds priv on s.
func (h *Handler) require(c *call, priv authz.Privilege, s authz.Securable) error {
	p, err := h.policy(c)
	if err != nil {
		return err
	}
	return p.Check(c.sub, priv, s)
}

// grantOwner gives the creator of a table its owner grants; a failure is
// logged (the table exists, an administrator can grant).
func (h *Handler) grantOwner(c *call, s authz.Securable) {
	if h.opts.Authz == nil {
		return
	}
	if err := h.opts.Authz.GrantOwner(c.ctx, c.sub, s); err != nil {
		h.log.ErrorContext(c.ctx, "mgmtapi: cannot grant the creator's privileges", "securable", s.String(), "err", err)
	}
}

// rawBody is the request body without the JSON size limit: ingest bodies
// stream data of any size.
func (c *call) rawBody() io.Reader {
	if c.body != nil {
		return c.body
	}
	return c.r.Body
}

// ingestTable loads the request body (CSV, NDJSON, Parquet or Arrow IPC)
// into a table: MODIFY on the table to append or overwrite, CREATE_TABLE
// on its namespace to create it (the creator then owns it).
func (h *Handler) ingestTable(c *call) error {
	wh, id, err := h.ingestTarget(c)
	if err != nil {
		return err
	}
	q := c.r.URL.Query()
	req := ingest.Request{Warehouse: wh, Table: id, Partition: q.Get("partition"), Name: q.Get("name")}
	if req.Format, err = ingest.ParseFormat(q.Get("format")); err != nil {
		return err
	}
	if req.Format == "" {
		req.Format = formatOfContentType(c.r.Header.Get("Content-Type"))
	}
	if req.Mode, err = ingest.ParseMode(q.Get("mode")); err != nil {
		return err
	}
	if s := q.Get("schema"); s != "" {
		if req.Schema, err = ingest.ParseSchema(s); err != nil {
			return err
		}
	}
	if req.TargetFileSize, err = intParam(q.Get("target_file_size"), "target_file_size"); err != nil {
		return err
	}
	batch, err := intParam(q.Get("batch_size"), "batch_size")
	if err != nil {
		return err
	}
	req.BatchSize = int(min(batch, 1<<24))
	req.SnapshotProperties = map[string]string{"floe.request-id": c.rid, "floe.principal": c.sub.Principal}
	req.Authorize = func(create bool) error {
		c.note("create", create)
		if create {
			return h.require(c, authz.CreateTable, authz.NamespaceOf(wh, id.Namespace))
		}
		return h.require(c, authz.Modify, authz.Table(wh, id))
	}
	res, err := h.opts.Ingest.Ingest(c.ctx, req, c.rawBody())
	c.note("mode", string(res.Mode), "format", string(res.Format), "rows", res.Rows, "files", res.Files, "bytes", res.Bytes, "snapshot_id", res.SnapshotID)
	if err != nil {
		return bodyError(err)
	}
	if res.Created {
		h.grantOwner(c, authz.Table(wh, id))
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return reply(c, status, res)
}

// streamTable buffers the NDJSON rows of the body for the table (MODIFY).
func (h *Handler) streamTable(c *call) error {
	wh, id, err := h.ingestTarget(c)
	if err != nil {
		return err
	}
	wait, err := boolParam(c.r.URL.Query().Get("wait"), "wait")
	if err != nil {
		return err
	}
	req := ingest.StreamRequest{Warehouse: wh, Table: id, Wait: wait, Authorize: func() error {
		return h.require(c, authz.Modify, authz.Table(wh, id))
	}}
	res, err := h.opts.Ingest.Stream(c.ctx, req, c.rawBody())
	c.note("rows", res.Accepted, "wait", wait, "snapshot_id", res.SnapshotID)
	if err != nil {
		return bodyError(err)
	}
	status := http.StatusAccepted
	if res.Committed {
		status = http.StatusOK
	}
	return reply(c, status, res)
}

// addFiles registers existing Parquet files of the warehouse in a table (MODIFY).
func (h *Handler) addFiles(c *call) error {
	var body AddFilesRequest
	if err := decode(c, &body); err != nil {
		return err
	}
	wh, id, err := h.ingestTarget(c)
	if err != nil {
		return err
	}
	c.note("paths", len(body.Paths))
	res, err := h.opts.Ingest.AddFiles(c.ctx, ingest.AddFilesRequest{Warehouse: wh, Table: id, Paths: body.Paths,
		Authorize: func() error { return h.require(c, authz.Modify, authz.Table(wh, id)) }})
	c.note("files", res.Files, "rows", res.Rows, "snapshot_id", res.SnapshotID)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, res)
}

// registerDelta creates a table over a Delta Lake table in the warehouse
// (CREATE_TABLE on the namespace; the creator owns the table).
func (h *Handler) registerDelta(c *call) error {
	var body RegisterDeltaRequest
	if err := decode(c, &body); err != nil {
		return err
	}
	if body.Location == "" {
		return missing("location")
	}
	wh, id, err := h.ingestTarget(c)
	if err != nil {
		return err
	}
	c.note("location", body.Location)
	res, err := h.opts.Ingest.RegisterDelta(c.ctx, ingest.DeltaRequest{Warehouse: wh, Table: id, Location: body.Location,
		Authorize: func() error { return h.require(c, authz.CreateTable, authz.NamespaceOf(wh, id.Namespace)) }})
	c.note("files", res.Files, "rows", res.Rows, "snapshot_id", res.SnapshotID)
	if err != nil {
		return err
	}
	h.grantOwner(c, authz.Table(wh, id))
	return reply(c, http.StatusCreated, res)
}

// formatOfContentType maps a request's media type to an input format.
func formatOfContentType(ct string) ingest.Format {
	switch ct {
	case "text/csv":
		return ingest.CSV
	case "text/tab-separated-values":
		return ingest.TSV
	case "application/x-ndjson", "application/jsonl":
		return ingest.NDJSON
	case "application/vnd.apache.parquet":
		return ingest.Parquet
	case "application/vnd.apache.arrow.file":
		return ingest.ArrowFile
	case "application/vnd.apache.arrow.stream":
		return ingest.ArrowStream
	}
	return ""
}

func intParam(s, name string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, floe.E(floe.Invalid, "", "query parameter %s=%q: want a whole number >= 0", name, s)
	}
	return n, nil
}

func boolParam(s, name string) (bool, error) {
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, floe.E(floe.Invalid, "", "query parameter %s=%q: want true or false", name, s)
	}
	return b, nil
}

// bodyError reports a body cut short by the client as Invalid.
func bodyError(err error) error {
	if floe.KindOf(err) == floe.Internal && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, http.ErrBodyReadAfterClose)) {
		return floe.Wrap(floe.Invalid, err, "the request body ended early")
	}
	return err
}
