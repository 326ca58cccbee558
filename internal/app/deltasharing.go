package app

import (
	"net/http"
	"strings"

	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/sharing/deltasharing"
)

// sharingResolver is what authenticates recipients and resolves shared
// names for the protocol servers: the sharing service, unless the
// configuration names another (tests use a fake). Nil (no service): the
// protocol servers are not mounted.
func (a *App) sharingResolver() sharing.Resolver {
	if a.cfg.SharingResolver != nil {
		return a.cfg.SharingResolver
	}
	if a.sharing == nil {
		return nil
	}
	return a.sharing
}

// deltaSharing returns the Delta Sharing server (mounted under
// deltasharing.Prefix), or nil when there is no resolver or the warehouse
// has no embedded store to read manifests from.
func (a *App) deltaSharing() http.Handler {
	res := a.sharingResolver()
	if res == nil || a.objects == nil {
		return nil
	}
	opts := deltasharing.Options{
		Resolver:  res,
		Tables:    a.cat,
		FS:        lake.NewBucketFS(a.objects),
		Minter:    a.minter,
		Region:    a.cfg.Region,
		PathStyle: true,
		URLTTL:    a.cfg.SharingURLTTL,
		Audit:     a.events.Record,
		Logger:    a.log,
		// The URL engines reach the S3 endpoint at, as vended credentials
		// name it (fixed once the endpoint listens).
		Endpoint: a.S3URL,
	}
	return deltasharing.New(opts)
}

// deltaSharingRoute reports whether path is the Delta Sharing server's.
func deltaSharingRoute(path string) bool {
	return path == deltasharing.Prefix || strings.HasPrefix(path, deltasharing.Prefix+"/")
}
