package app

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/ingest"
)

// ingester is the management API's ingest service: loads, add-files and
// Delta registration through an ingest.Service, micro-batches through its
// Streamer (flushed on Close).
type ingester struct {
	*ingest.Service
	streamer *ingest.Streamer
}

// Stream buffers a micro-batch.
func (i *ingester) Stream(ctx context.Context, req ingest.StreamRequest, body io.Reader) (ingest.StreamResult, error) {
	return i.streamer.Append(ctx, req, body)
}

// newIngester builds the ingest service over the catalog and the lake's
// storage; spooled inputs go to <data-dir>/staging.
func (a *App) newIngester(ctx context.Context) (*ingester, error) {
	fsys, err := a.lakeFS(ctx)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	lk := lake.New(a.cat, fsys, lake.Options{Logger: a.log})
	svc := ingest.New(a.cat, lk, ingest.Options{TempDir: filepath.Join(a.cfg.DataDir, "staging"), Logger: a.log})
	st := svc.NewStreamer(ingest.StreamOptions{FlushInterval: a.cfg.StreamFlushInterval, FlushRows: a.cfg.StreamFlushRows})
	return &ingester{Service: svc, streamer: st}, nil
}

// closeIngester commits the micro-batches still buffered.
func (a *App) closeIngester(ctx context.Context) error {
	if a.ingest == nil {
		return nil
	}
	return a.ingest.streamer.Close(ctx)
}
