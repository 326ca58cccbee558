package app

import (
	"net/http"

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
	return sharecat.New(sharecat.Options{
		Resolver:     res,
		Tables:       a.cat,
		Vending:      a.vend,
		MaxBodyBytes: min(a.cfg.MaxBodyBytes, sharecat.DefaultMaxBodyBytes),
		Audit:        a.events.Record,
		Logger:       a.log.With("component", "sharecat"),
	})
}
