package app

import (
	"net/http"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/sharing/deltasharing"
	"github.com/floe-lake/floe/sharing/sharecat"
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
