package restcat

import (
	"net/http"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

type createNamespaceRequest struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

type namespaceResponse struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

type listNamespacesResponse struct {
	NextPageToken *string    `json:"next-page-token,omitempty"`
	Namespaces    [][]string `json:"namespaces"`
}

type updatePropertiesRequest struct {
	Removals []string          `json:"removals"`
	Updates  map[string]string `json:"updates"`
}

type updatePropertiesResponse struct {
	Updated []string `json:"updated"`
	Removed []string `json:"removed"`
	Missing []string `json:"missing"`
}

func (h *Handler) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	wh, err := h.warehouse(r)
	if err != nil {
		return err
	}
	p, err := pageParams(r)
	if err != nil {
		return err
	}
	parent, ctr, err := parentParam(r, wh)
	if err != nil {
		return err
	}
	filter, err := h.visibleFilter(r, ctr)
	if err != nil {
		return err
	}
	var visible func(catalog.Namespace) bool
	if filter != nil {
		visible = func(ns catalog.Namespace) bool { return filter(authz.NamespaceOf(wh, ns)) }
	}
	fetch := func(after string, limit int) ([]catalog.Namespace, error) {
		return h.cat.ListNamespaces(r.Context(), wh, parent, after, limit)
	}
	nss, more, err := listPage(fetch, catalog.Namespace.Key, visible, p.after, p.limit)
	if filter != nil && floe.KindOf(err) == floe.NotFound {
		return h.listDenied(r, ctr) // do not reveal what the caller may not see
	}
	if err != nil {
		return err
	}
	if filter != nil && len(nss) == 0 && p.after == "" {
		return h.listDenied(r, ctr)
	}
	resp := listNamespacesResponse{Namespaces: make([][]string, 0, len(nss))}
	if more {
		tok := encodePageToken(nss[len(nss)-1].Key())
		resp.NextPageToken = &tok
	}
	for _, ns := range nss {
		resp.Namespaces = append(resp.Namespaces, ns)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (h *Handler) createNamespace(w http.ResponseWriter, r *http.Request) error {
	wh, err := h.warehouse(r)
	if err != nil {
		return err
	}
	var req createNamespaceRequest
	if err := readJSON(r, &req, "namespace"); err != nil {
		return err
	}
	ns := catalog.Namespace(req.Namespace)
	if err := ns.Validate(); err != nil {
		return err
	}
	if err := h.authorizeCreateNamespace(r, wh, ns); err != nil {
		return err
	}
	if req.Properties == nil {
		req.Properties = map[string]string{}
	}
	if err := h.cat.CreateNamespace(r.Context(), wh, ns, req.Properties); err != nil {
		return err
	}
	h.owned(r, authz.NamespaceOf(wh, ns))
	props, err := h.cat.WithDefaultLocation(r.Context(), wh, ns, req.Properties)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, namespaceResponse{Namespace: ns, Properties: props})
	return nil
}

func (h *Handler) loadNamespace(w http.ResponseWriter, r *http.Request) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil {
		return err
	}
	if err := h.require(r, authz.Describe, authz.NamespaceOf(wh, ns)); err != nil {
		return err
	}
	props, err := h.cat.LoadNamespace(r.Context(), wh, ns)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, namespaceResponse{Namespace: ns, Properties: props})
	return nil
}

func (h *Handler) namespaceExists(w http.ResponseWriter, r *http.Request) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil && floe.EntityOf(err) != "warehouse" && floe.KindOf(err) == floe.Invalid {
		w.WriteHeader(http.StatusNotFound) // an invalid name cannot exist
		return nil
	}
	if err != nil {
		return err
	}
	if err := h.require(r, authz.Describe, authz.NamespaceOf(wh, ns)); err != nil {
		return err
	}
	if _, err := h.cat.NamespaceProperties(r.Context(), wh, ns); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) dropNamespace(w http.ResponseWriter, r *http.Request) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil {
		return err
	}
	if err := h.authorizeDropNamespace(r, wh, ns); err != nil {
		return err
	}
	if err := h.cat.DropNamespace(r.Context(), wh, ns); err != nil {
		return err
	}
	h.dropped(r, authz.NamespaceOf(wh, ns))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) updateNamespaceProperties(w http.ResponseWriter, r *http.Request) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil {
		return err
	}
	if err := h.authorizeUpdateNamespace(r, wh, ns); err != nil {
		return err
	}
	var req updatePropertiesRequest
	if err := readJSON(r, &req); err != nil {
		return err
	}
	res, err := h.cat.UpdateNamespaceProperties(r.Context(), wh, ns, req.Removals, req.Updates)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, updatePropertiesResponse{Updated: res.Updated, Removed: res.Removed, Missing: res.Missing})
	return nil
}

// listEntities serves listTables and listViews.
func (h *Handler) listEntities(w http.ResponseWriter, r *http.Request, kind catalog.Kind) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil {
		return err
	}
	p, err := pageParams(r)
	if err != nil {
		return err
	}
	ctr := authz.NamespaceOf(wh, ns)
	filter, err := h.visibleFilter(r, ctr)
	if err != nil {
		return err
	}
	var visible func(string) bool
	if filter != nil {
		visible = func(name string) bool { return filter(securable(wh, catalog.Ident{Namespace: ns, Name: name}, kind)) }
	}
	fetch := func(after string, limit int) ([]string, error) {
		return h.cat.List(r.Context(), wh, ns, kind, after, limit)
	}
	names, more, err := listPage(fetch, func(s string) string { return s }, visible, p.after, p.limit)
	if filter != nil && floe.KindOf(err) == floe.NotFound {
		return h.listDenied(r, ctr)
	}
	if err != nil {
		return err
	}
	if filter != nil && len(names) == 0 && p.after == "" {
		return h.listDenied(r, ctr)
	}
	resp := listTablesResponse{Identifiers: make([]tableIdentifier, 0, len(names))}
	if more {
		tok := encodePageToken(names[len(names)-1])
		resp.NextPageToken = &tok
	}
	for _, n := range names {
		resp.Identifiers = append(resp.Identifiers, tableIdentifier{Namespace: ns, Name: n})
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (h *Handler) listTables(w http.ResponseWriter, r *http.Request) error {
	return h.listEntities(w, r, catalog.KindTable)
}

func (h *Handler) listViews(w http.ResponseWriter, r *http.Request) error {
	return h.listEntities(w, r, catalog.KindView)
}

type tableIdentifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

func (t *tableIdentifier) ident() (catalog.Ident, error) {
	if t == nil {
		return catalog.Ident{}, floe.E(floe.Invalid, "", "missing table identifier")
	}
	id := catalog.Ident{Namespace: t.Namespace, Name: t.Name}
	return id, id.Validate()
}

type listTablesResponse struct {
	NextPageToken *string           `json:"next-page-token,omitempty"`
	Identifiers   []tableIdentifier `json:"identifiers"`
}

// parentParam returns a listing's parent namespace (none: top level) and
// the securable that contains what it lists.
func parentParam(r *http.Request, wh string) (catalog.Namespace, authz.Securable, error) {
	var parent catalog.Namespace
	if s := r.URL.Query().Get("parent"); s != "" {
		parent = catalog.ParseNamespaceKey(s)
		if err := parent.Validate(); err != nil {
			return nil, authz.Securable{}, err
		}
	}
	if len(parent) > 0 {
		return parent, authz.NamespaceOf(wh, parent), nil
	}
	return parent, authz.Warehouse(wh), nil
}

// The privilege decisions of the namespace writes, shared by local
// warehouses and foreign catalogs whose writes are forwarded.

// authorizeCreateNamespace: CREATE_NAMESPACE on the parent (or warehouse).
func (h *Handler) authorizeCreateNamespace(r *http.Request, wh string, ns catalog.Namespace) error {
	return h.require(r, authz.CreateNamespace, container(wh, ns))
}

// authorizeDropNamespace: DROP on the namespace.
func (h *Handler) authorizeDropNamespace(r *http.Request, wh string, ns catalog.Namespace) error {
	return h.require(r, authz.Drop, authz.NamespaceOf(wh, ns))
}

// authorizeUpdateNamespace: ALTER on the namespace.
func (h *Handler) authorizeUpdateNamespace(r *http.Request, wh string, ns catalog.Namespace) error {
	return h.require(r, authz.Alter, authz.NamespaceOf(wh, ns))
}
