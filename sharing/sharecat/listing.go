package sharecat

import (
	"encoding/base64"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/sharing"
)

// config serves GET /v1/config: the share is the warehouse and the prefix.
func (h *Handler) config(w http.ResponseWriter, r *http.Request, c *call) error {
	if wh := r.URL.Query().Get("warehouse"); wh != "" && wh != c.share {
		return floe.E(floe.NotFound, "warehouse", "Catalog does not exist: %s", wh)
	}
	shares, err := h.opts.Resolver.Shares(r.Context(), c.recipient)
	if err != nil {
		return resolverError(err)
	}
	found := false
	for _, s := range shares {
		found = found || s.Name == c.share
	}
	if !found {
		return floe.E(floe.NotFound, "warehouse", "Catalog does not exist: %s", c.share)
	}
	defaults := map[string]string{}
	if v := h.opts.Vending; v != nil {
		defaults = v.ClientConfig()
	}
	httperr.JSON(w, http.StatusOK, map[string]any{
		"defaults":  defaults,
		"overrides": map[string]string{"prefix": c.share, "warehouse": c.share},
		"endpoints": h.endpoints(),
	})
	return nil
}

// shared returns the objects of the call's share the recipient may read;
// a share that does not exist or is not granted is err (of the kind the
// request path names, as for any name the recipient cannot see).
func (h *Handler) shared(r *http.Request, c *call) ([]sharing.Table, error) {
	ts, err := h.opts.Resolver.Tables(r.Context(), c.recipient, c.share)
	if floe.KindOf(err) == floe.NotFound {
		return nil, notFoundFor(r)
	}
	if err != nil {
		return nil, resolverError(err)
	}
	return ts, nil
}

// schemaParam returns the request's namespace as a share schema: one level
// (share catalogs have no nested namespaces), else ok is false.
func schemaParam(r *http.Request) (string, bool) {
	n := r.PathValue("namespace")
	if n == "" || strings.ContainsRune(n, 0x1f) {
		return "", false
	}
	return n, true
}

// schemas returns the distinct schemas of ts, sorted.
func schemas(ts []sharing.Table) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		if !seen[t.Schema] {
			seen[t.Schema] = true
			out = append(out, t.Schema)
		}
	}
	sort.Strings(out)
	return out
}

// hasSchema reports whether schema holds a shared object in ts.
func hasSchema(ts []sharing.Table, schema string) bool {
	for _, t := range ts {
		if t.Schema == schema {
			return true
		}
	}
	return false
}

func (h *Handler) listNamespaces(w http.ResponseWriter, r *http.Request, c *call) error {
	ts, err := h.shared(r, c)
	if err != nil {
		return err
	}
	names := schemas(ts)
	if parent := r.URL.Query().Get("parent"); parent != "" {
		// Schemas have no children; a parent that is no schema does not exist.
		if strings.ContainsRune(parent, 0x1f) || !hasSchema(ts, parent) {
			return floe.E(floe.NotFound, "namespace", "Namespace does not exist: %s", strings.ReplaceAll(parent, "\x1f", "."))
		}
		names = nil
	}
	page, next, err := h.page(r, names)
	if err != nil {
		return err
	}
	out := make([][]string, 0, len(page))
	for _, n := range page {
		out = append(out, []string{n})
	}
	body := map[string]any{"namespaces": out}
	if next != "" {
		body["next-page-token"] = next
	}
	httperr.JSON(w, http.StatusOK, body)
	return nil
}

// namespace checks that the request's namespace is a schema of the share.
func (h *Handler) namespace(r *http.Request, c *call) (string, []sharing.Table, error) {
	schema, ok := schemaParam(r)
	if !ok {
		return "", nil, notFoundFor(r)
	}
	ts, err := h.shared(r, c)
	if err != nil {
		return "", nil, err
	}
	if !hasSchema(ts, schema) {
		return "", nil, notFoundFor(r)
	}
	return schema, ts, nil
}

func (h *Handler) loadNamespace(w http.ResponseWriter, r *http.Request, c *call) error {
	schema, ts, err := h.namespace(r, c)
	if err != nil {
		return err
	}
	httperr.JSON(w, http.StatusOK, map[string]any{"namespace": []string{schema}, "properties": productProperties(ts, schema)})
	return nil
}

func (h *Handler) namespaceExists(w http.ResponseWriter, r *http.Request, c *call) error {
	if _, _, err := h.namespace(r, c); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type identifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

func (h *Handler) listTables(w http.ResponseWriter, r *http.Request, c *call) error {
	return h.listObjects(w, r, c, false)
}

// listViews lists the shared views of a schema when this server serves
// views (Options.ViewSource and RenameView); otherwise none.
func (h *Handler) listViews(w http.ResponseWriter, r *http.Request, c *call) error {
	return h.listObjects(w, r, c, true)
}

func (h *Handler) listObjects(w http.ResponseWriter, r *http.Request, c *call, views bool) error {
	schema, ts, err := h.namespace(r, c)
	if err != nil {
		return err
	}
	var names []string
	if !views || h.servesViews() {
		for _, t := range ts {
			if t.Schema == schema && t.IsView == views {
				names = append(names, t.Name)
			}
		}
		sort.Strings(names)
	}
	page, next, err := h.page(r, names)
	if err != nil {
		return err
	}
	ids := make([]identifier, 0, len(page))
	for _, n := range page {
		ids = append(ids, identifier{Namespace: []string{schema}, Name: n})
	}
	body := map[string]any{"identifiers": ids}
	if next != "" {
		body["next-page-token"] = next
	}
	httperr.JSON(w, http.StatusOK, body)
	return nil
}

// reportMetrics accepts a metrics report and drops it (bounded by the
// body limit).
func (h *Handler) reportMetrics(w http.ResponseWriter, r *http.Request, c *call) error {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return floe.Wrap(floe.Invalid, err, "request body is larger than the limit")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// page returns the page of sorted names that pageToken and pageSize ask
// for, at most MaxPageSize, and the token of the next page ("" at the end).
func (h *Handler) page(r *http.Request, names []string) ([]string, string, error) {
	q := r.URL.Query()
	size := h.opts.MaxPageSize
	if s := q.Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, "", floe.E(floe.Invalid, "", "pageSize must be a positive integer")
		}
		size = min(n, size)
	}
	if tok := q.Get("pageToken"); tok != "" {
		last, err := decodePageToken(tok)
		if err != nil {
			return nil, "", err
		}
		i := sort.SearchStrings(names, last)
		if i < len(names) && names[i] == last {
			i++
		}
		names = names[i:]
	}
	if len(names) <= size {
		return names, "", nil
	}
	return names[:size], encodePageToken(names[size-1]), nil
}

// Page tokens are the base64url of the last name returned.
func encodePageToken(last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("s1:" + last))
}

func decodePageToken(tok string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < 3 || string(b[:3]) != "s1:" {
		return "", floe.E(floe.Invalid, "", "invalid pageToken")
	}
	return string(b[3:]), nil
}

// productProperties are the properties of a share's schema: for each
// shared data product with outputs in it, floe.products.<name> holding the
// product's description, version, owner and outputs (as the provider's
// catalog shows them on its namespaces).
func productProperties(ts []sharing.Table, schema string) map[string]string {
	props := map[string]string{}
	for _, t := range ts {
		if t.Product != nil && strings.EqualFold(t.Schema, schema) {
			props["floe.products."+t.Product.Name] = t.Product.Summary
		}
	}
	return props
}
