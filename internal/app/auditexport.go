package app

import (
	"context"
	"fmt"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/awsspans"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/auditexport"
)

// auditExporter is the App's handle on the system.audit export.
type auditExporter = auditexport.Exporter

// lakeFS returns the FileIO Floe's own Iceberg writes go through: the
// embedded object store, or (storage "s3") iceberg-go's S3 FileIO with
// this server's AWS configuration, as the catalog's own s3io uses.
func (a *App) lakeFS(ctx context.Context) (icebergio.IO, error) {
	if a.objects != nil {
		return lake.NewBucketFS(a.objects), nil
	}
	ac, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(a.cfg.Region))
	if err != nil {
		return nil, fmt.Errorf("aws configuration: %w", err)
	}
	ac.APIOptions = append(ac.APIOptions, awsspans.APIOption) // S3 calls traced under their request
	// The FileIO keeps its context for every request: it must outlive ctx.
	return lake.NewS3FS(context.Background(), ac, a.cfg.WarehouseLocation,
		lake.S3Options{Endpoint: a.cfg.S3.Endpoint, PathStyle: a.cfg.S3.PathStyle})
}

// newAuditExporter returns an exporter of the audit log to system.audit in
// the default warehouse. Nodes take turns through the store's leases.
func (a *App) newAuditExporter(ctx context.Context) (*auditExporter, error) {
	fsys, err := a.lakeFS(ctx)
	if err != nil {
		return nil, err
	}
	lk := lake.New(a.cat, fsys, lake.Options{Logger: a.log})
	var src auditexport.Source = a.store
	var wake <-chan struct{}
	if a.auditTail != nil {
		src, wake = a.auditTail, a.auditTail.Ready()
	}
	return auditexport.New(src, a.cat, lk, auditexport.Options{
		Warehouse: a.cfg.Warehouse,
		Interval:  a.cfg.AuditExportInterval,
		Leases:    a.store,
		Logger:    a.log,
		Wake:      wake,
		Observe: func(r auditexport.Result, err error) {
			a.metrics.AuditExport(r.Records, r.LastSeq, time.Now(), err)
		},
	}), nil
}

// startAuditExport starts exporting every audit_export_interval, unless the
// export is off (interval 0).
func (a *App) startAuditExport() {
	if a.cfg.AuditExportInterval <= 0 {
		return
	}
	e, err := a.newAuditExporter(context.Background())
	if err != nil {
		a.log.Error("the audit export to system.audit cannot start", "err", err)
		return
	}
	a.auditExport = e
	e.Start()
}

// stopAuditExport stops the background export, if it runs.
func (a *App) stopAuditExport() error {
	if a.auditExport == nil {
		return nil
	}
	return a.auditExport.Close()
}

// ExportAudit appends the audit records not yet in system.audit now (also
// when the background export is off) and reports what it did.
func (a *App) ExportAudit(ctx context.Context) (auditexport.Result, error) {
	e := a.auditExport
	if e == nil {
		var err error
		if e, err = a.newAuditExporter(ctx); err != nil {
			return auditexport.Result{}, err
		}
	}
	return e.Export(ctx)
}

// auditTailWake is how many stored records wake the export before its
// interval: one full commit's worth.
const auditTailWake = auditexport.DefaultBatchSize

// AuditTail returns the in-memory tail of the audit log the export reads
// (the records this node stored last).
func (a *App) AuditTail() *audit.Tail { return a.auditTail }
