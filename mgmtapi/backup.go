package mgmtapi

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/store/backup"
)

// Backuper writes a consistent backup of the metadata store (see
// store/sqlstore's Backup and docs/operations.md).
type Backuper func(ctx context.Context, w io.Writer) (backup.Header, backup.Trailer, error)

// backupRoutes is GET /api/v1/admin/backup: the same file as `floe
// backup`, streamed to an administrator. It is audited as mgmt.backup
// (recorded after the snapshot, so the file does not hold its own event).
func (h *Handler) backupRoutes() []route {
	return []route{{"GET", "/api/v1/admin/backup", "mgmt.backup", h.streamBackup}}
}

// streamBackup streams the backup. Once the first bytes are sent the status
// cannot change: a failure later cuts the stream short, and the file then
// lacks its trailer, which floe restore refuses.
func (h *Handler) streamBackup(c *call) error {
	if err := requireAdmin(c.sub, "a backup of the metadata store"); err != nil {
		return err
	}
	if h.opts.Backup == nil {
		return floe.E(floe.Unsupported, "", "backups are not served on this server")
	}
	c.resource = "store"
	name := "floe-" + time.Now().UTC().Format("20060102T150405Z") + ".backup"
	c.w.Header().Set("Content-Type", "application/gzip")
	c.w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	c.w.Header().Set("Cache-Control", "no-store")
	lw := &lazyStatus{w: c.w}
	hdr, tr, err := h.opts.Backup(c.ctx, lw)
	if err != nil {
		if lw.started {
			c.note("stream_cut", true)
		}
		return err
	}
	var rows int64
	for _, n := range tr.Rows {
		rows += n
	}
	c.note("schema_version", hdr.SchemaVersion, "audit_head_seq", hdr.AuditHead.Seq, "tables", len(tr.Rows), "rows", rows, "sha256", tr.SHA256)
	return nil
}

// lazyStatus writes 200 before the first byte, so that an error before any
// byte still gets its own status.
type lazyStatus struct {
	w       http.ResponseWriter
	started bool
}

func (l *lazyStatus) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		l.w.WriteHeader(http.StatusOK)
	}
	return l.w.Write(p)
}
