package check

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// maxNamespaces bounds the namespaces walked when sampling tables.
const maxNamespaces = 50

// jsonHas reports whether b is a JSON object with key.
func jsonHas(b []byte, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}

// checkConfig (S2): GET /v1/config answers defaults and overrides, a
// prefix and the endpoints it serves.
func (r *run) checkConfig(ctx context.Context) {
	p := "/v1/config"
	if r.o.Warehouse != "" {
		p += "?warehouse=" + url.QueryEscape(r.o.Warehouse)
	}
	a := r.call(ctx, r.token, http.MethodGet, p, nil)
	var cfg catalogConfig
	if a.err != nil || a.status != http.StatusOK || json.Unmarshal(a.body, &cfg) != nil {
		r.add("S2", "s2.config", Fail, "GET %s: %s", p, a.describe())
		return
	}
	r.config = &cfg
	r.prefix = cfg.Overrides["prefix"]
	if r.prefix == "" {
		r.prefix = cfg.Defaults["prefix"]
	}
	r.rep.Prefix = r.prefix
	if u := cfg.Overrides["oauth2-server-uri"]; u != "" && r.o.TokenURL == "" {
		r.tokenURL = u
	} else if u := cfg.Defaults["oauth2-server-uri"]; u != "" && r.o.TokenURL == "" {
		r.tokenURL = u
	}
	var missing []string
	if cfg.Defaults == nil || cfg.Overrides == nil {
		missing = append(missing, "defaults/overrides")
	}
	if r.prefix == "" {
		missing = append(missing, "prefix")
	}
	if len(cfg.Endpoints) == 0 {
		missing = append(missing, "endpoints")
	}
	if len(missing) > 0 {
		r.add("S2", "s2.config", Warn, "GET %s answered without %s (endpoints %d)", p, strings.Join(missing, ", "), len(cfg.Endpoints))
		return
	}
	r.add("S2", "s2.config", Pass, "GET %s: prefix %q, %d endpoints", p, r.prefix, len(cfg.Endpoints))
}

// listNamespaces lists the children of parent (nil: top level) as tok.
func (r *run) listNamespaces(ctx context.Context, tok string, parent []string) ([][]string, answer) {
	var out [][]string
	q := ""
	for pages := 0; pages < 100; pages++ {
		p := r.path("/namespaces")
		v := url.Values{}
		if parent != nil {
			v.Set("parent", strings.Join(parent, "\x1f"))
		}
		if q != "" {
			v.Set("pageToken", q)
		}
		if len(v) > 0 {
			p += "?" + v.Encode()
		}
		a := r.call(ctx, tok, http.MethodGet, p, nil)
		var page struct {
			Namespaces    [][]string `json:"namespaces"`
			NextPageToken string     `json:"next-page-token"`
		}
		if a.err != nil || a.status != http.StatusOK || json.Unmarshal(a.body, &page) != nil {
			return out, a
		}
		out = append(out, page.Namespaces...)
		if page.NextPageToken == "" {
			return out, a
		}
		q = page.NextPageToken
	}
	return out, answer{status: http.StatusOK}
}

// listIdents lists the tables or views ("tables", "views") of ns as tok.
func (r *run) listIdents(ctx context.Context, tok string, ns []string, kind string) ([]string, answer) {
	var out []string
	q := ""
	for pages := 0; pages < 100; pages++ {
		p := r.path("/namespaces/" + nsPath(ns) + "/" + kind)
		if q != "" {
			p += "?pageToken=" + url.QueryEscape(q)
		}
		a := r.call(ctx, tok, http.MethodGet, p, nil)
		var page struct {
			Identifiers []struct {
				Namespace []string `json:"namespace"`
				Name      string   `json:"name"`
			} `json:"identifiers"`
			NextPageToken string `json:"next-page-token"`
		}
		if a.err != nil || a.status != http.StatusOK || json.Unmarshal(a.body, &page) != nil {
			return out, a
		}
		for _, id := range page.Identifiers {
			out = append(out, id.Name)
		}
		if page.NextPageToken == "" {
			return out, a
		}
		q = page.NextPageToken
	}
	return out, answer{status: http.StatusOK}
}

// checkNamespaces (S2): namespaces list; walks them (two levels) to
// sample tables.
func (r *run) checkNamespaces(ctx context.Context) {
	top, a := r.listNamespaces(ctx, r.token, nil)
	if a.err != nil || a.status != http.StatusOK {
		r.add("S2", "s2.namespaces", Fail, "GET %s: %s", r.path("/namespaces"), a.describe())
		return
	}
	r.nsListed = true
	r.ns = top
	for _, ns := range top {
		if len(r.ns) >= maxNamespaces {
			break
		}
		kids, _ := r.listNamespaces(ctx, r.token, ns)
		for _, k := range kids {
			if len(r.ns) < maxNamespaces {
				r.ns = append(r.ns, k)
			}
		}
	}
	if len(top) == 0 {
		r.add("S2", "s2.namespaces", Warn, "GET %s answered no namespace", r.path("/namespaces"))
		return
	}
	r.add("S2", "s2.namespaces", Pass, "%d namespaces listed (e.g. %s)", len(r.ns), strings.Join(r.ns[0], "."))
}

// splitTable reads "ns.sub.name".
func splitTable(s string) ([]string, string, bool) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || slices.Contains(parts, "") {
		return nil, "", false
	}
	return parts[:len(parts)-1], parts[len(parts)-1], true
}

// loadTable loads ns.name as tok; header adds request headers.
func (r *run) loadTable(ctx context.Context, tok string, ns []string, name string, header http.Header) (*tableLoad, answer) {
	t := &tableLoad{ns: ns, name: name}
	a := r.call(ctx, tok, http.MethodGet, r.path("/namespaces/"+nsPath(ns)+"/tables/"+url.PathEscape(name)), header)
	t.status = a.status
	if a.err != nil || a.status != http.StatusOK {
		t.loadErr = a.describe()
		return t, a
	}
	if err := json.Unmarshal(a.body, &t.result); err != nil {
		t.loadErr = fmt.Sprintf("the LoadTableResult does not parse: %v", err)
		return t, a
	}
	if err := json.Unmarshal(t.result.Metadata, &t.metadata); err != nil {
		t.loadErr = fmt.Sprintf("the table metadata does not parse: %v", err)
	}
	return t, a
}

// checkLoadTable (S2): sampled tables load (without the access-delegation
// header: S4 looks at what comes back).
func (r *run) checkLoadTable(ctx context.Context) {
	type ident struct {
		ns   []string
		name string
	}
	var want []ident
	for _, s := range r.o.Tables {
		if ns, n, ok := splitTable(s); ok {
			want = append(want, ident{ns, n})
		}
	}
	for _, ns := range r.ns {
		if len(want) >= r.o.SampleTables*4 {
			break
		}
		names, _ := r.listIdents(ctx, r.token, ns, "tables")
		for _, n := range names {
			want = append(want, ident{ns, n})
		}
	}
	var failed []string
	for _, w := range want {
		if len(r.tables) >= r.o.SampleTables {
			break
		}
		t, _ := r.loadTable(ctx, r.token, w.ns, w.name, nil)
		if t.loadErr != "" {
			failed = append(failed, t.String()+": "+t.loadErr)
			continue
		}
		r.tables = append(r.tables, t)
	}
	switch {
	case len(want) == 0:
		r.add("S2", "s2.load-table", Skip, "no table found to load (give one with --table ns.name)")
	case len(failed) > 0:
		r.add("S2", "s2.load-table", Fail, "loadTable failed for %s", strings.Join(failed, "; "))
	default:
		names := make([]string, len(r.tables))
		for i, t := range r.tables {
			names[i] = t.String()
		}
		r.add("S2", "s2.load-table", Pass, "loaded %s", strings.Join(names, ", "))
	}
}

// checkFederationURI (S2): prints the REST URI and warehouse identifier a
// federating engine must configure, exactly.
func (r *run) checkFederationURI(context.Context) {
	if r.config == nil {
		r.add("S2", "s2.federation-uri", Skip, "no config answer")
		return
	}
	wh := r.o.Warehouse
	if wh == "" {
		wh = r.prefix
	}
	if wh == "" {
		r.add("S2", "s2.federation-uri", Warn, "uri=%s, no warehouse identifier: the config answered no prefix", r.base)
		return
	}
	r.add("S2", "s2.federation-uri", Pass, "uri=%s warehouse=%s", r.base, wh)
}

// checkCurrentMetadata (S1): sampled tables are Iceberg v2 or v3 with a
// metadata location (the file's readability is checked with S4's
// credentials in checkScoped).
func (r *run) checkCurrentMetadata(context.Context) {
	if len(r.tables) == 0 {
		r.add("S1", "s1.current-metadata", Skip, "no table loaded")
		return
	}
	var bad, ok []string
	for _, t := range r.tables {
		v := t.metadata.FormatVersion
		switch {
		case t.result.MetadataLocation == "":
			bad = append(bad, t.String()+": no metadata-location")
		case v != 2 && v != 3:
			bad = append(bad, fmt.Sprintf("%s: format-version %d", t, v))
		default:
			ok = append(ok, fmt.Sprintf("%s v%d", t, v))
		}
	}
	if len(bad) > 0 {
		r.add("S1", "s1.current-metadata", Fail, "%s", strings.Join(bad, "; "))
		return
	}
	r.add("S1", "s1.current-metadata", Pass, "%s, each with a metadata-location", strings.Join(ok, ", "))
}

// checkViews (S5): views exist beside the raw tables.
func (r *run) checkViews(ctx context.Context) {
	if !r.nsListed {
		r.add("S5", "s5.views", Skip, "namespaces could not be listed")
		return
	}
	n, unsupported := 0, 0
	var first string
	for _, ns := range r.ns {
		views, a := r.listIdents(ctx, r.token, ns, "views")
		if a.err == nil && a.status != http.StatusOK {
			unsupported++
			continue
		}
		if n == 0 && len(views) > 0 {
			first = strings.Join(ns, ".") + "." + views[0]
		}
		n += len(views)
	}
	switch {
	case len(r.ns) > 0 && unsupported == len(r.ns):
		r.add("S5", "s5.views", Warn, "listViews is not served: consumers get raw tables only")
	case n == 0:
		r.add("S5", "s5.views", Warn, "no view in %d namespaces: consumers get raw tables only", len(r.ns))
	default:
		r.add("S5", "s5.views", Pass, "%d views (e.g. %s)", n, first)
	}
}
