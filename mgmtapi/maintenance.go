package mgmtapi

import (
	"context"
	"net/http"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/maint"
)

// Maintenance runs table maintenance on demand and describes tables
// (*maint.Maintainer).
type Maintenance interface {
	Maintain(ctx context.Context, wh string, id catalog.Ident, req maint.Request) ([]maint.Report, error)
	Show(ctx context.Context, wh string, id catalog.Ident) (maint.TableInfo, error)
	Timeline(ctx context.Context, wh string, id catalog.Ident) (maint.Timeline, error)
}

// MaintenanceResult is the answer of POST .../maintenance.
type MaintenanceResult struct {
	Table   string         `json:"table"`
	Reports []maint.Report `json:"reports"`
}

// tableParams reads the table of a /tables/{warehouse}/{namespace}/{table}
// path and records it as the call's audit resource.
func tableParams(c *call) (string, catalog.Ident, error) {
	wh := c.r.PathValue("warehouse")
	id := catalog.Ident{Namespace: ParseNamespace(c.r.PathValue("namespace")), Name: c.r.PathValue("table")}
	if err := id.Validate(); err != nil {
		return "", catalog.Ident{}, err
	}
	c.resource = AuditResource(authz.Table(wh, id))
	return wh, id, nil
}

// maintenance checks that the server runs maintenance and that the caller
// holds priv on the table.
func (h *Handler) maintenance(c *call, priv authz.Privilege) (string, catalog.Ident, error) {
	wh, id, err := tableParams(c)
	if err != nil {
		return "", catalog.Ident{}, err
	}
	if h.opts.Maintenance == nil {
		return "", catalog.Ident{}, floe.E(floe.Unsupported, "", "table maintenance is not available on this server")
	}
	p, err := h.policy(c)
	if err != nil {
		return "", catalog.Ident{}, err
	}
	if err := p.Check(c.sub, priv, authz.Table(wh, id)); err != nil {
		return "", catalog.Ident{}, err
	}
	return wh, id, nil
}

// maintainTable runs maintenance on a table now (MODIFY on the table,
// which its owner holds).
func (h *Handler) maintainTable(c *call) error {
	var req maint.Request
	if err := decode(c, &req); err != nil {
		return err
	}
	c.note("compact", req.Compact, "expire", req.Expire, "orphans", req.Orphans, "manifests", req.Manifests, "dry_run", req.DryRun)
	wh, id, err := h.maintenance(c, authz.Modify)
	if err != nil {
		return err
	}
	reports, err := h.opts.Maintenance.Maintain(c.ctx, wh, id, req)
	if err != nil {
		return err
	}
	changed := false
	for _, r := range reports {
		changed = changed || r.Changed
	}
	c.note("changed", changed)
	return reply(c, http.StatusOK, MaintenanceResult{Table: id.String(), Reports: reports})
}

// tableSummary describes a table: snapshots, files per partition, file
// sizes, maintenance policy and runs (SELECT on the table: partition
// values are data).
func (h *Handler) tableSummary(c *call) error {
	wh, id, err := h.maintenance(c, authz.Select)
	if err != nil {
		return err
	}
	info, err := h.opts.Maintenance.Show(c.ctx, wh, id)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, info)
}

// tableTimeline serves the snapshot history of a table from its metadata
// (DESCRIBE on the table: snapshot summaries are metadata).
func (h *Handler) tableTimeline(c *call) error {
	wh, id, err := h.maintenance(c, authz.Describe)
	if err != nil {
		return err
	}
	tl, err := h.opts.Maintenance.Timeline(c.ctx, wh, id)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, tl)
}
