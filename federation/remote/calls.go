package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	floe "github.com/floe-lake/floe"
)

// Prefix returns the remote's path prefix from GET /v1/config (its
// overrides, then its defaults; "" when neither names one), cached for
// CacheTTL. A missing remote warehouse is Unavailable: it is the
// operator's configuration, not the caller's request, that is wrong.
func (c *Client) Prefix(ctx context.Context) (string, error) {
	c.mu.Lock()
	if c.havePrefix && c.o.CacheTTL > 0 && !c.since(c.prefixAt, c.o.CacheTTL) {
		p := c.prefix
		c.mu.Unlock()
		return p, nil
	}
	c.mu.Unlock()
	q := url.Values{}
	if c.o.Warehouse != "" {
		q.Set("warehouse", c.o.Warehouse)
	}
	var cfg struct {
		Defaults  map[string]string `json:"defaults"`
		Overrides map[string]string `json:"overrides"`
	}
	o := op{name: "getConfig", method: http.MethodGet, path: "/v1/config", query: q, limit: maxBody}
	o.parse = func(r *response) error { return c.decode(o, r, &cfg) }
	if _, err := c.do(ctx, o); err != nil {
		return "", err
	}
	raw, ok := cfg.Overrides["prefix"]
	if !ok {
		raw = cfg.Defaults["prefix"]
	}
	p, err := escapePrefix(raw)
	if err != nil {
		return "", c.unavailable(err, "unusable prefix in its config")
	}
	c.mu.Lock()
	c.prefix, c.prefixAt, c.havePrefix = p, c.o.Now(), true
	c.mu.Unlock()
	return p, nil
}

// escapePrefix escapes each /-separated segment of a prefix (Glue's is
// "catalogs/<id>"), refusing empty, "." and ".." segments.
func escapePrefix(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s == "" || s == "." || s == ".." {
			return "", fmt.Errorf("prefix %q has an empty or dot segment", p)
		}
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/"), nil
}

// path is the escaped path /v1/{prefix}/rest...; rest is already escaped.
func (c *Client) path(ctx context.Context, rest string) (string, error) {
	p, err := c.Prefix(ctx)
	if err != nil {
		return "", err
	}
	if p == "" {
		return "/v1/" + rest, nil
	}
	return "/v1/" + p + "/" + rest, nil
}

// nsParam joins a namespace with the unit separator, as the REST spec's
// paths and parent parameter take it (unescaped).
func nsParam(ns []string) string { return strings.Join(ns, "\x1f") }

// checkNS refuses an empty namespace or level, or one containing 0x1F.
func checkNS(ns []string, allowEmpty bool) error {
	if len(ns) == 0 && !allowEmpty {
		return floe.E(floe.Invalid, "namespace", "namespace must not be empty")
	}
	for _, p := range ns {
		if p == "" || strings.ContainsRune(p, 0x1f) {
			return floe.E(floe.Invalid, "namespace", "invalid namespace level %q", p)
		}
	}
	return nil
}

// listPages follows next-page-token up to MaxListPages pages, handing each
// page to page, which returns the page's next-page-token.
func (c *Client) listPages(ctx context.Context, o op, page func(*response) (string, error)) error {
	token := ""
	for n := 0; n < c.o.MaxListPages; n++ {
		q := url.Values{}
		maps.Copy(q, o.query)
		if token != "" {
			q.Set("pageToken", token)
		}
		po := o
		po.query = q
		next := ""
		po.parse = func(r *response) error {
			var err error
			next, err = page(r)
			return err
		}
		if _, err := c.do(ctx, po); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		if next == token {
			return c.unavailable(fmt.Errorf("%s: page token repeated", o.name), "%s repeated its page token", o.name)
		}
		token = next
	}
	return c.unavailable(fmt.Errorf("%s: more than %d pages", o.name, c.o.MaxListPages), "%s has more than %d pages", o.name, c.o.MaxListPages)
}

// fresh returns the cached value under key while its TTL runs.
func (c *Client) fresh(key string) (any, bool) {
	if c.cache == nil {
		return nil, false
	}
	e, ok := c.cache.get(key)
	if !ok || c.since(e.fetched, c.o.CacheTTL) {
		return nil, false
	}
	return e.val, true
}

func (c *Client) store(e entry) {
	if c.cache != nil {
		c.cache.put(e)
	}
}

func stringsSize(ss []string) int64 {
	n := int64(0)
	for _, s := range ss {
		n += int64(len(s)) + 16
	}
	return n
}

func mapSize(m map[string]string) int64 {
	n := int64(0)
	for k, v := range m {
		n += int64(len(k)+len(v)) + 32
	}
	return n
}

// ListNamespaces lists the namespaces under parent (nil: the top level),
// following pages.
func (c *Client) ListNamespaces(ctx context.Context, parent []string) ([][]string, error) {
	if err := checkNS(parent, true); err != nil {
		return nil, err
	}
	p, err := c.path(ctx, "namespaces")
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if len(parent) > 0 {
		q.Set("parent", nsParam(parent))
	}
	key := "ns-list\x00" + p + "?" + q.Encode()
	if v, ok := c.fresh(key); ok {
		return cloneNamespaces(v.([][]string)), nil
	}
	o := op{name: "listNamespaces", method: http.MethodGet, path: p, query: q, limit: maxBody,
		entity: "namespace", object: "namespace " + nsString(parent)}
	out := [][]string{}
	err = c.listPages(ctx, o, func(r *response) (string, error) {
		var page struct {
			Namespaces [][]string `json:"namespaces"`
			Next       *string    `json:"next-page-token"`
		}
		if err := c.decode(o, r, &page); err != nil {
			return "", err
		}
		out = append(out, page.Namespaces...)
		if page.Next == nil {
			return "", nil
		}
		return *page.Next, nil
	})
	if err != nil {
		return nil, err
	}
	size := int64(0)
	for _, ns := range out {
		size += stringsSize(ns) + 24
	}
	c.store(entry{key: key, val: out, size: size, fetched: c.o.Now()})
	return cloneNamespaces(out), nil
}

func cloneNamespaces(in [][]string) [][]string {
	out := make([][]string, len(in))
	for i, ns := range in {
		out[i] = append([]string(nil), ns...)
	}
	return out
}

// LoadNamespace returns the properties of a remote namespace.
func (c *Client) LoadNamespace(ctx context.Context, ns []string) (map[string]string, error) {
	if err := checkNS(ns, false); err != nil {
		return nil, err
	}
	p, err := c.path(ctx, "namespaces/"+url.PathEscape(nsParam(ns)))
	if err != nil {
		return nil, err
	}
	key := "ns\x00" + p
	if v, ok := c.fresh(key); ok {
		return maps.Clone(v.(map[string]string)), nil
	}
	o := op{name: "loadNamespace", method: http.MethodGet, path: p, limit: maxBody,
		entity: "namespace", object: "namespace " + nsString(ns)}
	var body struct {
		Properties map[string]string `json:"properties"`
	}
	o.parse = func(r *response) error { return c.decode(o, r, &body) }
	if _, err := c.do(ctx, o); err != nil {
		return nil, err
	}
	if body.Properties == nil {
		body.Properties = map[string]string{}
	}
	c.store(entry{key: key, val: body.Properties, size: mapSize(body.Properties), fetched: c.o.Now()})
	return maps.Clone(body.Properties), nil
}

// ListTables lists the tables of a remote namespace, following pages.
func (c *Client) ListTables(ctx context.Context, ns []string) ([]Ident, error) {
	return c.listIdents(ctx, ns, "tables", "listTables")
}

// ListViews lists the views of a remote namespace, following pages.
func (c *Client) ListViews(ctx context.Context, ns []string) ([]Ident, error) {
	return c.listIdents(ctx, ns, "views", "listViews")
}

func (c *Client) listIdents(ctx context.Context, ns []string, kind, name string) ([]Ident, error) {
	if err := checkNS(ns, false); err != nil {
		return nil, err
	}
	p, err := c.path(ctx, "namespaces/"+url.PathEscape(nsParam(ns))+"/"+kind)
	if err != nil {
		return nil, err
	}
	key := "list\x00" + p
	if v, ok := c.fresh(key); ok {
		return cloneIdents(v.([]Ident)), nil
	}
	o := op{name: name, method: http.MethodGet, path: p, limit: maxBody,
		entity: "namespace", object: "namespace " + nsString(ns)}
	out := []Ident{}
	err = c.listPages(ctx, o, func(r *response) (string, error) {
		var page struct {
			Identifiers []struct {
				Namespace []string `json:"namespace"`
				Name      string   `json:"name"`
			} `json:"identifiers"`
			Next *string `json:"next-page-token"`
		}
		if err := c.decode(o, r, &page); err != nil {
			return "", err
		}
		for _, id := range page.Identifiers {
			out = append(out, Ident{Namespace: id.Namespace, Name: id.Name})
		}
		if page.Next == nil {
			return "", nil
		}
		return *page.Next, nil
	})
	if err != nil {
		return nil, err
	}
	size := int64(0)
	for _, id := range out {
		size += stringsSize(id.Namespace) + int64(len(id.Name)) + 48
	}
	c.store(entry{key: key, val: out, size: size, fetched: c.o.Now()})
	return cloneIdents(out), nil
}

func cloneIdents(in []Ident) []Ident {
	out := make([]Ident, len(in))
	for i, id := range in {
		out[i] = Ident{Namespace: append([]string(nil), id.Namespace...), Name: id.Name}
	}
	return out
}

// loadTableWire is a LoadTableResult as the REST spec encodes it.
type loadTableWire struct {
	MetadataLocation   string              `json:"metadata-location"`
	Metadata           json.RawMessage     `json:"metadata"`
	Config             map[string]string   `json:"config"`
	StorageCredentials []StorageCredential `json:"storage-credentials"`
}

// LoadTable loads a table. withCredentials sends X-Iceberg-Access-Delegation:
// vended-credentials and returns the remote's credentials; without it, the
// credential-free metadata (config and storage-credentials emptied) may
// come from the cache. A cached result with credentials is reused only
// while none of its credentials is past half its lifetime; one of unknown
// lifetime is not reused. Cache revalidation uses If-None-Match with the
// remote's ETag (304 keeps the entry).
func (c *Client) LoadTable(ctx context.Context, ns []string, name string, withCredentials bool) (*LoadTableResult, error) {
	p, err := c.objectPath(ctx, ns, "table", name)
	if err != nil {
		return nil, err
	}
	key := "table\x00" + p
	o := op{name: "loadTable", method: http.MethodGet, path: p, limit: maxTableBody, header: http.Header{},
		entity: "table", object: "table " + Ident{ns, name}.String()}
	if withCredentials {
		o.header.Set("X-Iceberg-Access-Delegation", "vended-credentials")
	}
	v, err := c.load(ctx, o, key, withCredentials, c.parseLoadTable(o, nil))
	if err != nil {
		return nil, err
	}
	return copyTable(v.(*LoadTableResult), withCredentials), nil
}

// parseLoadTable decodes a LoadTableResult answer to o, with the config
// keys drop removed.
func (c *Client) parseLoadTable(o op, drop []string) parseFunc {
	return func(r *response) (any, int64, map[string]string, []StorageCredential, error) {
		var w loadTableWire
		if err := c.decode(o, r, &w); err != nil {
			return nil, 0, nil, nil, err
		}
		if !isJSONObject(w.Metadata) {
			return nil, 0, nil, nil, c.unavailable(fmt.Errorf("loadTable: metadata is not an object"), "malformed loadTable answer")
		}
		for _, k := range drop {
			delete(w.Config, k)
		}
		res := &LoadTableResult{MetadataLocation: w.MetadataLocation, Metadata: w.Metadata, Config: w.Config,
			StorageCredentials: w.StorageCredentials, ETag: r.header.Get("ETag")}
		size := int64(len(res.Metadata)+len(res.MetadataLocation)+len(res.ETag)) + mapSize(res.Config)
		for _, sc := range res.StorageCredentials {
			size += int64(len(sc.Prefix)) + mapSize(sc.Config) + 32
		}
		return res, size, res.Config, res.StorageCredentials, nil
	}
}

// LoadView loads a view. Its result is cached like a table's; a config
// with credentials of unknown lifetime is not cached.
func (c *Client) LoadView(ctx context.Context, ns []string, name string) (*LoadViewResult, error) {
	p, err := c.objectPath(ctx, ns, "view", name)
	if err != nil {
		return nil, err
	}
	key := "view\x00" + p
	o := op{name: "loadView", method: http.MethodGet, path: p, limit: maxBody,
		entity: "view", object: "view " + Ident{ns, name}.String()}
	v, err := c.load(ctx, o, key, true, func(r *response) (any, int64, map[string]string, []StorageCredential, error) {
		var w loadTableWire
		if err := c.decode(o, r, &w); err != nil {
			return nil, 0, nil, nil, err
		}
		if !isJSONObject(w.Metadata) {
			return nil, 0, nil, nil, c.unavailable(fmt.Errorf("loadView: metadata is not an object"), "malformed loadView answer")
		}
		res := &LoadViewResult{MetadataLocation: w.MetadataLocation, Metadata: w.Metadata, Config: w.Config}
		return res, int64(len(res.Metadata)+len(res.MetadataLocation)) + mapSize(res.Config), res.Config, nil, nil
	})
	if err != nil {
		return nil, err
	}
	r := v.(*LoadViewResult)
	cfg := maps.Clone(r.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	return &LoadViewResult{MetadataLocation: r.MetadataLocation, Metadata: r.Metadata, Config: cfg}, nil
}

// parseFunc decodes a load answer into the value to cache, its size, and
// the config and storage credentials it carries.
type parseFunc func(*response) (any, int64, map[string]string, []StorageCredential, error)

// load serves a load from the cache or the remote. delegated: the caller
// needs the remote's credentials, so only an entry loaded with them and
// before their half-life may answer; otherwise any entry may (the caller
// strips credentials).
func (c *Client) load(ctx context.Context, o op, key string, delegated bool, parse parseFunc) (any, error) {
	var cached entry
	usable := false
	if c.cache != nil {
		if e, ok := c.cache.get(key); ok {
			now := c.o.Now()
			usable = !delegated || (e.delegated && (e.credsUntil.IsZero() || now.Before(e.credsUntil)))
			if usable && !c.since(e.fetched, c.o.CacheTTL) {
				return e.val, nil
			}
			cached = e
		}
	}
	if usable && cached.etag != "" {
		if o.header == nil {
			o.header = http.Header{}
		}
		o.header.Set("If-None-Match", cached.etag)
	}
	var (
		val   any
		size  int64
		cfg   map[string]string
		creds []StorageCredential
	)
	o.parse = func(r *response) error {
		var err error
		val, size, cfg, creds, err = parse(r)
		return err
	}
	resp, err := c.do(ctx, o)
	if err != nil {
		return nil, err
	}
	now := c.o.Now()
	if resp.status == http.StatusNotModified {
		if !usable {
			return nil, c.unavailable(fmt.Errorf("%s: 304 without If-None-Match", o.name), "unexpected HTTP 304")
		}
		c.cache.touch(key, now)
		return cached.val, nil
	}
	e := entry{key: key, val: val, size: size, etag: resp.header.Get("ETag"), fetched: now, delegated: delegated}
	if t, ok := val.(*LoadTableResult); ok && !delegated {
		e.val = copyTable(t, false) // a describe-only load keeps no credentials
	}
	if delegated {
		until, has, known := credentialHalfLife(cfg, creds, now)
		switch {
		case !has:
		case known && now.Before(until):
			e.credsUntil = until
		default:
			// Credentials of unknown or spent lifetime are never reused:
			// keep only what a describe-only load may serve.
			if t, ok := val.(*LoadTableResult); ok {
				e.val, e.delegated = copyTable(t, false), false
			} else {
				e.val = nil
			}
		}
	}
	if e.val != nil {
		c.store(e)
	}
	return val, nil
}

// copyTable returns a copy safe to hand out; without credentials its config
// and storage credentials are emptied.
func copyTable(r *LoadTableResult, withCredentials bool) *LoadTableResult {
	out := &LoadTableResult{MetadataLocation: r.MetadataLocation, Metadata: r.Metadata, ETag: r.ETag, Config: map[string]string{}}
	if !withCredentials {
		return out
	}
	maps.Copy(out.Config, r.Config)
	for _, sc := range r.StorageCredentials {
		out.StorageCredentials = append(out.StorageCredentials, StorageCredential{Prefix: sc.Prefix, Config: maps.Clone(sc.Config)})
	}
	return out
}

// credentialHalfLife finds the credentials in a load answer and the instant
// half their lifetime (from now, the fetch) has passed, by the earliest
// expiry among them (keys like s3.session-token-expires-at-ms,
// gcs.oauth2.token-expires-at, expiration-time: epoch milliseconds or
// RFC 3339). has: there are credentials; known: an expiry was found.
func credentialHalfLife(cfg map[string]string, creds []StorageCredential, now time.Time) (until time.Time, has, known bool) {
	sets := []map[string]string{cfg}
	for _, sc := range creds {
		sets = append(sets, sc.Config)
	}
	has = len(creds) > 0
	var earliest time.Time
	for _, set := range sets {
		for k, v := range set {
			lk := strings.ToLower(k)
			if isExpiryKey(lk) {
				if t, ok := parseExpiry(v); ok && (earliest.IsZero() || t.Before(earliest)) {
					earliest = t
				}
				continue
			}
			if isCredentialKey(lk) {
				has = true
			}
		}
	}
	if !has || earliest.IsZero() {
		return time.Time{}, has, false
	}
	return now.Add(earliest.Sub(now) / 2), true, true
}

func isExpiryKey(k string) bool {
	return strings.Contains(k, "expires-at") || strings.Contains(k, "expiration") || strings.Contains(k, "expiry")
}

func isCredentialKey(k string) bool {
	for _, s := range []string{"secret", "token", "access-key", "sas", "password", "key-id"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// parseExpiry reads epoch milliseconds or an RFC 3339 instant.
func parseExpiry(v string) (time.Time, bool) {
	if ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		return time.UnixMilli(ms), true
	}
	if t, err := time.Parse(time.RFC3339, strings.TrimSpace(v)); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// objectPath checks a table or view name (kind "table" or "view") and
// returns its remote path.
func (c *Client) objectPath(ctx context.Context, ns []string, kind, name string) (string, error) {
	if err := checkNS(ns, false); err != nil {
		return "", err
	}
	if name == "" {
		return "", floe.E(floe.Invalid, kind, "%s name must not be empty", kind)
	}
	return c.path(ctx, "namespaces/"+url.PathEscape(nsParam(ns))+"/"+kind+"s/"+url.PathEscape(name))
}
