package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/sharing/deltasharing"
	"github.com/floe-lake/floe/sharing/sharecat"
	"github.com/floe-lake/floe/sqlgw/viewrename"
)

// shareCatalogs returns the share catalogs (every share as a read-only
// Iceberg REST catalog under /shares/<share>/iceberg), or nil until a
// sharing resolver exists (sharingResolver). Recipients'
// credentials are vended like the main catalog's (same minter, S3
// endpoint, region and TTL) and audited as recipients.
func (a *App) shareCatalogs() http.Handler {
	res := a.sharingResolver()
	if res == nil {
		return nil
	}
	opts := sharecat.Options{
		Resolver:     res,
		Tables:       a.cat,
		Vending:      a.vend,
		MaxBodyBytes: min(a.cfg.MaxBodyBytes, sharecat.DefaultMaxBodyBytes),
		Audit:        a.events.Record,
		Logger:       a.log.With("component", "sharecat"),
		ViewSource:   a.cat,
		RenameView:   a.renameView,
	}
	if a.objects != nil {
		// Tables shared without history or with a partition filter are
		// served as derived snapshots, read by read-listed credentials that
		// Floe's S3 endpoint checks against them.
		opts.Views = lake.NewBucketFS(a.objects)
		opts.FileFilter = func(filter string, md table.Metadata) (sharecat.FileDecider, error) {
			return deltasharing.NewFileFilter(filter, md)
		}
	}
	return sharecat.New(opts)
}

// renameView adapts the view rewriter to the share catalogs.
func (a *App) renameView(ctx context.Context, query, dialect string, defaultNS []string,
	rename func(ns []string, name string) (string, string, bool)) (string, error) {
	if dialect != viewrename.DuckDB && dialect != viewrename.Spark {
		// Share catalogs serve the dialects whose table references Floe's
		// parser is known to find (a trino representation is left out).
		return "", floe.E(floe.Invalid, "view", "views in dialect %q are not rewritten for shares", dialect)
	}
	out, err := a.viewRenamer.Rename(ctx, query, dialect, defaultNS, func(ns []string, name string) (viewrename.Name, bool) {
		s, t, ok := rename(ns, name)
		return viewrename.Name{Namespace: s, Name: t}, ok
	})
	if errors.Is(err, viewrename.ErrNotShared) {
		return "", fmt.Errorf("%w: %w", sharecat.ErrViewNotShared, err)
	}
	return out, err
}
