package sharecat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/sharing"
)

// ViewSource loads the real views behind shared views (*catalog.Catalog).
type ViewSource interface {
	LoadView(ctx context.Context, wh string, id catalog.Ident) (*catalog.ViewState, error)
}

// ViewRenamer rewrites one representation of a view (its SQL in dialect)
// so that every table it reads is named by rename's answer, and fails when
// rename refuses one or the SQL cannot be rewritten exactly
// (sqlgw/viewrename). ErrViewNotShared marks the first case.
type ViewRenamer func(ctx context.Context, query, dialect string, defaultNS []string,
	rename func(ns []string, name string) (schema, table string, ok bool)) (string, error)

// ErrViewNotShared is what a ViewRenamer's error wraps when the view reads
// a table that rename refused.
var ErrViewNotShared = errors.New("the view reads a table that is not in the share")

// servesViews reports whether shared views are listed and served.
func (h *Handler) servesViews() bool { return h.opts.ViewSource != nil && h.opts.RenameView != nil }

// resolveView returns the shared view the request path names.
func (h *Handler) resolveView(r *http.Request, c *call) (sharing.Table, error) {
	schema, ok := schemaParam(r)
	name := r.PathValue("view")
	if !ok || name == "" || !h.servesViews() {
		return sharing.Table{}, notFoundFor(r)
	}
	t, err := h.tableCached(r.Context(), c.recipient, c.share, schema, name)
	if floe.KindOf(err) == floe.NotFound {
		return sharing.Table{}, notFoundFor(r)
	}
	if err != nil {
		return sharing.Table{}, resolverError(err)
	}
	if !t.IsView || t.Share != c.share || t.Schema != schema || t.Name != name {
		return sharing.Table{}, notFoundFor(r)
	}
	return t, nil
}

func (h *Handler) viewExists(w http.ResponseWriter, r *http.Request, c *call) error {
	if _, err := h.resolveView(r, c); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// loadView serves a shared view: its current version only, each SQL
// representation rewritten to read the share's tables under their aliases
// (representations that cannot be rewritten exactly are left out), with
// the view's schema in the share as its default namespace. A view that
// reads anything the share does not hold is refused, naming nothing.
func (h *Handler) loadView(w http.ResponseWriter, r *http.Request, c *call) error {
	t, err := h.resolveView(r, c)
	if err != nil {
		return err
	}
	vs, err := h.opts.ViewSource.LoadView(r.Context(), t.Warehouse, t.Ident)
	if floe.KindOf(err) == floe.NotFound {
		return notFoundFor(r)
	}
	if err != nil {
		return floe.Wrap(floe.Unavailable, err, "view %s.%s cannot be loaded now", t.Schema, t.Name)
	}
	objects, err := h.shared(r, c)
	if err != nil {
		return err
	}
	aliases := map[string]sharing.Table{}
	var keys []string
	for _, o := range objects {
		if o.Warehouse != t.Warehouse {
			continue
		}
		k := strings.ToLower(strings.Join(o.Ident.Namespace, "\x1f") + "\x00" + o.Ident.Name)
		aliases[k] = o
		keys = append(keys, k+"\x00"+o.Schema+"\x00"+o.Name)
	}
	slices.Sort(keys)
	sum := sha256.Sum256([]byte(strings.Join(keys, "\x01")))
	cacheKey := vs.Location + "\x00" + c.share + "\x00" + t.Schema + "\x00" + hex.EncodeToString(sum[:])
	md, ok := h.trim.get(cacheKey)
	if !ok || vs.Location == "" {
		rename := func(ns []string, name string) (string, string, bool) {
			o, ok := aliases[strings.ToLower(strings.Join(ns, "\x1f")+"\x00"+name)]
			return o.Schema, o.Name, ok
		}
		if md, err = h.rewriteView(r.Context(), t, vs, rename); err != nil {
			return err
		}
		if vs.Location != "" {
			h.trim.put(cacheKey, md)
		}
	}
	head := []byte(`{"metadata-location":null,"metadata":`)
	if vs.Location != "" {
		loc, _ := json.Marshal(vs.Location)
		head = append(append([]byte(`{"metadata-location":`), loc...), `,"metadata":`...)
	}
	body := append(append(head, md...), `,"config":{}}`...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

// rewriteView returns the view metadata served for t.
func (h *Handler) rewriteView(ctx context.Context, t sharing.Table, vs *catalog.ViewState,
	rename func(ns []string, name string) (string, string, bool)) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(vs.JSON, &obj); err != nil {
		return nil, floe.Wrap(floe.Internal, err, "internal error")
	}
	cur := vs.Metadata.CurrentVersion()
	if cur == nil {
		return nil, floe.E(floe.Forbidden, "view", "view %s.%s has no version to serve", t.Schema, t.Name)
	}
	var versions []map[string]json.RawMessage
	if err := json.Unmarshal(obj["versions"], &versions); err != nil {
		return nil, floe.Wrap(floe.Internal, err, "internal error")
	}
	var version map[string]json.RawMessage
	for _, v := range versions {
		var id int64
		if json.Unmarshal(v["version-id"], &id) == nil && id == cur.VersionID {
			version = v
		}
	}
	if version == nil {
		return nil, floe.Wrap(floe.Internal, nil, "internal error")
	}
	var reps []map[string]json.RawMessage
	_ = json.Unmarshal(version["representations"], &reps)
	defaultNS := cur.DefaultNamespace
	var kept []map[string]json.RawMessage
	notShared := false
	for _, rep := range reps {
		var typ, dialect, sql string
		_ = json.Unmarshal(rep["type"], &typ)
		_ = json.Unmarshal(rep["dialect"], &dialect)
		_ = json.Unmarshal(rep["sql"], &sql)
		if typ != "sql" {
			continue
		}
		out, err := h.opts.RenameView(ctx, sql, strings.ToLower(dialect), defaultNS, rename)
		if errors.Is(err, ErrViewNotShared) {
			notShared = true
			break
		}
		if err != nil {
			// The detail may quote the provider's SQL: logged, not served.
			h.log.InfoContext(ctx, "share catalog: a view representation cannot be rewritten", "share", t.Share,
				"view", t.Schema+"."+t.Name, "dialect", dialect, "err", err)
			continue
		}
		rep["sql"], _ = json.Marshal(out)
		kept = append(kept, rep)
	}
	switch {
	case notShared:
		return nil, floe.E(floe.Forbidden, "view", "view %s.%s reads a table that is not in this share: the provider must share "+
			"every table the view reads in the same share", t.Schema, t.Name)
	case len(kept) == 0:
		return nil, floe.E(floe.Forbidden, "view", "view %s.%s cannot be served through this share: none of its SQL "+
			"representations can be rewritten to the share's names", t.Schema, t.Name)
	}
	version["representations"], _ = json.Marshal(kept)
	version["default-namespace"], _ = json.Marshal([]string{t.Schema})
	delete(version, "default-catalog")
	obj["versions"], _ = json.Marshal([]map[string]json.RawMessage{version})
	var log []map[string]json.RawMessage
	_ = json.Unmarshal(obj["version-log"], &log)
	keptLog := []map[string]json.RawMessage{}
	for _, e := range log {
		var id int64
		if json.Unmarshal(e["version-id"], &id) == nil && id == cur.VersionID {
			keptLog = append(keptLog, e)
		}
	}
	obj["version-log"], _ = json.Marshal(keptLog)
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, floe.Wrap(floe.Internal, err, "internal error")
	}
	return out, nil
}
