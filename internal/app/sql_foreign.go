package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/apache/iceberg-go/table"
	lru "github.com/hashicorp/golang-lru/v2"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/federation/remote"
	"github.com/floe-lake/floe/sqlgw/engine"
)

// maxForeignIOs bounds the storage clients kept for the SQL endpoint's
// reads of foreign tables: one per foreign catalog, bucket and vended
// credential, reused while the remote hands out the same credential.
const maxForeignIOs = 64

// sqlForeign is the SQL engine's engine.ForeignTables: the foreign catalogs
// this node serves, their tables loaded from the remote with the storage
// credentials it vends to Floe. The engine calls LoadTable only for a
// caller who may SELECT the table in Floe.
type sqlForeign struct {
	a   *App
	ios *lru.Cache[string, icebergio.IO]
}

var _ engine.ForeignTables = (*sqlForeign)(nil)

func newSQLForeign(a *App) *sqlForeign {
	ios, err := lru.New[string, icebergio.IO](maxForeignIOs)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return &sqlForeign{a: a, ios: ios}
}

// client returns the remote client of foreign catalog wh, or nil.
func (f *sqlForeign) client(wh string) *remote.Client {
	if fc, ok := f.a.foreignCatalogByName(wh).(*foreignCatalog); ok && fc != nil {
		return fc.c
	}
	return nil
}

// Foreign reports whether wh is a foreign catalog served here.
func (f *sqlForeign) Foreign(wh string) bool { return f.client(wh) != nil }

// LoadTable loads a foreign table with the remote's vended credentials.
func (f *sqlForeign) LoadTable(ctx context.Context, who engine.Caller, wh string, id catalog.Ident) (*table.Table, error) {
	c := f.client(wh)
	if c == nil {
		return nil, floe.E(floe.NotFound, "table", "Table does not exist: %s (foreign catalog %s is no longer served)", id, wh)
	}
	ctx = context.WithValue(ctx, remoteCallerKey{}, remoteCaller{principal: who.Subject.Principal, tokenID: who.TokenID})
	t, err := c.LoadTable(ctx, id.Namespace, id.Name, true)
	if err != nil {
		return nil, err
	}
	md, err := table.ParseMetadataBytes(t.Metadata)
	if err != nil {
		return nil, floe.Wrap(floe.Unavailable, err, "foreign catalog %s answered metadata of table %s that does not parse", wh, id)
	}
	props, err := storageProps(wh, id, md.Location(), t)
	if err != nil {
		return nil, err
	}
	fsF := func(ctx context.Context) (icebergio.IO, error) {
		fs, err := f.storage(ctx, wh, md.Location(), props)
		if err != nil {
			return nil, floe.Wrap(floe.Unavailable, err, "foreign catalog %s: cannot open the storage of table %s", wh, id)
		}
		return fs, nil
	}
	ident := append(slices.Clone([]string(id.Namespace)), id.Name)
	return table.New(ident, md, t.MetadataLocation, fsF, nil), nil
}

// storage returns the storage client for location of foreign catalog wh
// with props, kept (at most maxForeignIOs, least recently used out) for
// the next query with the same catalog, bucket and credential.
func (f *sqlForeign) storage(ctx context.Context, wh, location string, props map[string]string) (icebergio.IO, error) {
	key := ioKey(wh, location, props)
	if fs, ok := f.ios.Get(key); ok {
		return fs, nil
	}
	// The client keeps its context for its requests: it outlives this
	// query (in the cache), and the query's deadline bounds each read
	// through the engine.
	fs, err := icebergio.LoadFS(context.WithoutCancel(ctx), props, location)
	if err != nil {
		return nil, err
	}
	f.ios.Add(key, fs)
	return fs, nil
}

// remoteCaller is the SQL session whose query made a remote call, for its
// audit event (REST requests carry their token's claims instead).
type remoteCaller struct{ principal, tokenID string }

type remoteCallerKey struct{}

// foreignStorageKeys are the storage properties a remote may set for
// Floe's reads of its files; any other (a proxy, a request signer, a
// credentials provider) is ignored.
var foreignStorageKeys = map[string]bool{
	icebergio.S3AccessKeyID: true, icebergio.S3SecretAccessKey: true, icebergio.S3SessionToken: true,
	icebergio.S3EndpointURL: true, icebergio.S3Region: true, icebergio.S3ClientRegion: true,
	icebergio.S3ForceVirtualAddressing: true, "s3.path-style-access": true,
}

// storageProps returns the FileIO properties Floe reads a foreign table's
// files with: the remote's config, overridden by the storage credential
// whose prefix is the longest one of the table's location. Floe reads
// foreign files only with credentials the remote vended: never with its
// own storage identity, which the remote could otherwise point anywhere.
func storageProps(wh string, id catalog.Ident, location string, t *remote.LoadTableResult) (map[string]string, error) {
	props := map[string]string{}
	for k, v := range t.Config {
		if foreignStorageKeys[k] {
			props[k] = v
		}
	}
	best := -1
	for i, sc := range t.StorageCredentials {
		if strings.HasPrefix(location, sc.Prefix) && (best < 0 || len(sc.Prefix) > len(t.StorageCredentials[best].Prefix)) {
			best = i
		}
	}
	if best >= 0 {
		for k, v := range t.StorageCredentials[best].Config {
			if foreignStorageKeys[k] {
				props[k] = v
			}
		}
	}
	u, err := url.Parse(location)
	if err != nil || (u.Scheme != "s3" && u.Scheme != "s3a" && u.Scheme != "s3n") {
		return nil, floe.E(floe.Unsupported, "table", "foreign catalog %s: table %s is stored at %q: Floe's SQL endpoint reads foreign tables on S3 only", wh, id, location)
	}
	if props[icebergio.S3AccessKeyID] == "" || props[icebergio.S3SecretAccessKey] == "" {
		return nil, floe.E(floe.Forbidden, "table", "foreign catalog %s vended no storage credentials for table %s: Floe reads foreign files only with credentials the remote vends", wh, id)
	}
	if v, ok := props["s3.path-style-access"]; ok {
		delete(props, "s3.path-style-access")
		if _, set := props[icebergio.S3ForceVirtualAddressing]; !set && strings.EqualFold(v, "true") {
			props[icebergio.S3ForceVirtualAddressing] = "false"
		}
	}
	if ep := props[icebergio.S3EndpointURL]; ep != "" {
		if err := checkForeignEndpoint(ep); err != nil {
			return nil, floe.Wrap(floe.Forbidden, err, "foreign catalog %s: refused storage endpoint for table %s", wh, id)
		}
	}
	return props, nil
}

// checkForeignEndpoint refuses a storage endpoint a remote names that is
// not http(s), or is a link-local address (cloud instance metadata
// services live there).
func checkForeignEndpoint(ep string) error {
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return floe.E(floe.Forbidden, "", "storage endpoint %q is not an http(s) URL", ep)
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsUnspecified() || a.IsMulticast() {
			return floe.E(floe.Forbidden, "", "storage endpoint %q is a link-local, multicast or unspecified address", ep)
		}
	}
	return nil
}

// ioKey identifies a storage client: the catalog, the bucket and the
// properties (a digest, so that no secret is kept as a key).
func ioKey(wh, location string, props map[string]string) string {
	h := sha256.New()
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(props[k]))
		h.Write([]byte{0})
	}
	bucket := location
	if u, err := url.Parse(location); err == nil {
		bucket = u.Scheme + "://" + u.Host
	}
	return wh + "\x00" + bucket + "\x00" + hex.EncodeToString(h.Sum(nil))
}
