package restcat

import (
	"net/http"

	"github.com/floe-lake/floe"
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
	var parent catalog.Namespace
	if s := r.URL.Query().Get("parent"); s != "" {
		parent = catalog.ParseNamespaceKey(s)
		if err := parent.Validate(); err != nil {
			return err
		}
	}
	limit := p.limit
	if limit > 0 {
		limit++ // one extra tells whether another page follows
	}
	nss, err := h.cat.ListNamespaces(r.Context(), wh, parent, p.after, limit)
	if err != nil {
		return err
	}
	resp := listNamespacesResponse{Namespaces: make([][]string, 0, len(nss))}
	if p.limit > 0 && len(nss) > p.limit {
		nss = nss[:p.limit]
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
	if req.Properties == nil {
		req.Properties = map[string]string{}
	}
	if err := h.cat.CreateNamespace(r.Context(), wh, ns, req.Properties); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, namespaceResponse{Namespace: ns, Properties: req.Properties})
	return nil
}

func (h *Handler) loadNamespace(w http.ResponseWriter, r *http.Request) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil {
		return err
	}
	props, err := h.cat.NamespaceProperties(r.Context(), wh, ns)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, namespaceResponse{Namespace: ns, Properties: props})
	return nil
}

func (h *Handler) namespaceExists(w http.ResponseWriter, r *http.Request) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil {
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
	if err := h.cat.DropNamespace(r.Context(), wh, ns); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) updateNamespaceProperties(w http.ResponseWriter, r *http.Request) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil {
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
	limit := p.limit
	if limit > 0 {
		limit++
	}
	names, err := h.cat.List(r.Context(), wh, ns, kind, p.after, limit)
	if err != nil {
		return err
	}
	resp := listTablesResponse{Identifiers: make([]tableIdentifier, 0, len(names))}
	if p.limit > 0 && len(names) > p.limit {
		names = names[:p.limit]
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
