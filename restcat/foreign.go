package restcat

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// Foreign is a foreign (federated) catalog that Floe serves as one of its
// warehouses: its namespaces, tables and views are listed and loaded from
// the remote catalog in place (package federation). Errors are floe errors
// (NotFound for a missing remote object, Unavailable when the remote cannot
// answer).
type Foreign interface {
	ListNamespaces(ctx context.Context, parent []string) ([][]string, error)
	LoadNamespace(ctx context.Context, ns []string) (map[string]string, error)
	ListTables(ctx context.Context, ns []string) ([]catalog.Ident, error)
	ListViews(ctx context.Context, ns []string) ([]catalog.Ident, error)
	// LoadTable loads a table; with withCredentials the remote's vended
	// credentials come with it (the caller may read the table's files).
	LoadTable(ctx context.Context, ns []string, name string, withCredentials bool) (*ForeignTable, error)
	LoadView(ctx context.Context, ns []string, name string) (*ForeignView, error)
}

// ForeignTable is a remote table as the remote catalog answered it.
type ForeignTable struct {
	MetadataLocation   string
	Metadata           json.RawMessage
	Config             map[string]string
	StorageCredentials []ForeignCredential
}

// ForeignCredential is one storage credential the remote vended.
type ForeignCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

// ForeignView is a remote view as the remote catalog answered it.
type ForeignView struct {
	MetadataLocation string
	Metadata         json.RawMessage
	Config           map[string]string
}

// ConfigNoCredentials is the table config key that tells a client why a
// foreign table came without storage credentials.
const ConfigNoCredentials = "floe.credentials"

// foreign returns the foreign catalog the request's prefix names, if any.
func (h *Handler) foreign(r *http.Request) Foreign {
	return h.foreignNamed(r.PathValue("prefix"))
}

// foreignNamed returns the foreign catalog served as warehouse name, if any.
func (h *Handler) foreignNamed(name string) Foreign {
	if h.opts.Foreign == nil || name == "" {
		return nil
	}
	return h.opts.Foreign(name)
}

// serveForeign serves one operation on a foreign catalog: reads through
// the remote, judged by Floe's own grants on the warehouse's securables;
// writes forwarded to the remote when the catalog's writes are on (see
// forwardWrite), else refused.
func (h *Handler) serveForeign(w http.ResponseWriter, r *http.Request, rt route, f Foreign) error {
	wh := r.PathValue("prefix")
	fw := foreignWriter(f)
	if rt.name == "signRequest" {
		return h.signForeign(w, r, f, fw)
	}
	if rt.mutates {
		if fw == nil {
			return floe.E(floe.Forbidden, "", "%s is a foreign catalog, read-only in Floe: write to it in its own catalog", wh)
		}
		return h.forwardWrite(w, r, rt, fw)
	}
	ctx := r.Context()
	switch rt.name {
	case "listNamespaces":
		parent, ctr, err := parentParam(r, wh)
		if err != nil {
			return err
		}
		filter, err := h.visibleFilter(r, ctr)
		if err != nil {
			return err
		}
		nss, err := f.ListNamespaces(ctx, parent)
		if err != nil {
			return err
		}
		out := make([][]string, 0, len(nss))
		for _, ns := range nss {
			if filter == nil || filter(authz.NamespaceOf(wh, ns)) {
				out = append(out, ns)
			}
		}
		if filter != nil && len(out) == 0 {
			return h.listDenied(r, ctr)
		}
		writeJSON(w, http.StatusOK, listNamespacesResponse{Namespaces: out})
		return nil
	case "loadNamespace", "namespaceExists":
		ns, err := namespaceParam(r)
		if err != nil {
			return err
		}
		if err := h.requireVisible(r, authz.NamespaceOf(wh, ns)); err != nil {
			return err
		}
		props, err := f.LoadNamespace(ctx, ns)
		if err != nil {
			return err
		}
		if rt.name == "namespaceExists" {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		if props == nil {
			props = map[string]string{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"namespace": ns, "properties": props})
		return nil
	case "listTables", "listViews":
		ns, err := namespaceParam(r)
		if err != nil {
			return err
		}
		ctr := authz.NamespaceOf(wh, ns)
		filter, err := h.visibleFilter(r, ctr)
		if err != nil {
			return err
		}
		list, kind := f.ListTables, catalog.KindTable
		if rt.name == "listViews" {
			list, kind = f.ListViews, catalog.KindView
		}
		ids, err := list(ctx, ns)
		if err != nil {
			return err
		}
		out := make([]map[string]any, 0, len(ids))
		for _, id := range ids {
			if filter == nil || filter(securable(wh, id, kind)) {
				out = append(out, map[string]any{"namespace": []string(id.Namespace), "name": id.Name})
			}
		}
		if filter != nil && len(out) == 0 {
			return h.listDenied(r, ctr)
		}
		sort.Slice(out, func(i, j int) bool { return out[i]["name"].(string) < out[j]["name"].(string) })
		writeJSON(w, http.StatusOK, map[string]any{"identifiers": out})
		return nil
	case "loadTable", "tableExists", "loadCredentials":
		id, err := identParam(r, "table")
		if err != nil {
			return err
		}
		s := authz.Table(wh, id)
		if err := h.require(r, authz.Describe, s); err != nil {
			return err
		}
		write, denied := h.fileAccess(r, wh, id)
		if rt.name == "loadCredentials" && denied != nil {
			return denied
		}
		creds := denied == nil && rt.name != "tableExists"
		if fs, ok := f.(ForeignSigner); ok && creds && rt.name == "loadTable" && delegation(r) == delegateSign {
			if signed, err := h.loadForeignSigned(w, r, fs, wh, id.Namespace, id.Name); err != nil || signed {
				return err
			}
		}
		var t *ForeignTable
		identity := "read"
		if creds && write && fw != nil {
			identity = "write"
			// A caller who may write the table's files gets what the
			// remote vends to the write identity; anyone else the read
			// identity's.
			t, err = fw.LoadTableForWrite(ctx, id.Namespace, id.Name)
		} else {
			t, err = f.LoadTable(ctx, id.Namespace, id.Name, creds)
		}
		if err != nil {
			return err
		}
		switch rt.name {
		case "tableExists":
			w.WriteHeader(http.StatusNoContent)
			return nil
		case "loadCredentials":
			sc := foreignCredentials(t)
			h.auditPassthrough(r, wh, id, sc, identity)
			w.Header().Set("Cache-Control", "no-store")
			writeJSON(w, http.StatusOK, map[string]any{"storage-credentials": sc})
			return nil
		}
		if creds {
			h.auditPassthrough(r, wh, id, foreignCredentials(t), identity)
		}
		writeForeignTable(w, wh, t, creds, "")
		return nil
	case "loadView", "viewExists":
		id, err := identParam(r, "view")
		if err != nil {
			return err
		}
		if err := h.require(r, authz.Describe, authz.View(wh, id)); err != nil {
			return err
		}
		v, err := f.LoadView(ctx, id.Namespace, id.Name)
		if err != nil {
			return err
		}
		if rt.name == "viewExists" {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		body := map[string]any{"metadata": v.Metadata, "config": map[string]string{}}
		if v.MetadataLocation != "" {
			body["metadata-location"] = v.MetadataLocation
		}
		writeJSON(w, http.StatusOK, body)
		return nil
	case "reportMetrics":
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return floe.E(floe.Unsupported, "", "%s is not supported on foreign catalog %s", rt.name, wh)
}

// requireVisible checks that the caller holds some privilege on s or
// DESCRIBE on what contains it (as listings show it).
func (h *Handler) requireVisible(r *http.Request, s authz.Securable) error {
	c, err := h.caller(r)
	if err != nil || c.unrestricted || c.pol.Effective(c.sub, s) != 0 {
		return err
	}
	return c.pol.Check(c.sub, authz.Describe, s)
}

// foreignCredentials returns t's storage credentials: the remote's, or, when
// it sent only config keys, those as one credential for the table.
func foreignCredentials(t *ForeignTable) []ForeignCredential {
	if len(t.StorageCredentials) > 0 {
		return t.StorageCredentials
	}
	keys := map[string]string{}
	for k, v := range t.Config {
		if strings.HasPrefix(k, "s3.") || strings.HasPrefix(k, "gcs.") || strings.HasPrefix(k, "adls.") || strings.HasPrefix(k, "client.") {
			keys[k] = v
		}
	}
	if keys["s3.access-key-id"] == "" && keys["gcs.oauth2.token"] == "" && keys["adls.sas-token"] == "" {
		return nil
	}
	return []ForeignCredential{{Prefix: "", Config: keys}}
}
