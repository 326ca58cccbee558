package restcat

import (
	"encoding/json"
	"net/http"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// Functions (the spec's listFunctions and loadFunction) are authorized at
// the namespace: Floe has no function securable yet, so DESCRIBE on the
// namespace (held by anyone with any privilege on it) lets a caller list
// and load its functions, and nothing narrower does. Writes go through the
// management API (CREATE_VIEW on the namespace).

type listFunctionsResponse struct {
	NextPageToken *string    `json:"next-page-token,omitempty"`
	Identifiers   [][]string `json:"identifiers"`
}

func (h *Handler) listFunctions(w http.ResponseWriter, r *http.Request) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil {
		return err
	}
	p, err := pageParams(r)
	if err != nil {
		return err
	}
	if err := h.require(r, authz.Describe, authz.NamespaceOf(wh, ns)); err != nil {
		return err
	}
	fetch := func(after string, limit int) ([]string, error) {
		return h.cat.ListFunctions(r.Context(), wh, ns, after, limit)
	}
	names, more, err := listPage(fetch, func(s string) string { return s }, nil, p.after, p.limit)
	if err != nil {
		return err
	}
	resp := listFunctionsResponse{Identifiers: make([][]string, 0, len(names))}
	if more {
		tok := encodePageToken(names[len(names)-1])
		resp.NextPageToken = &tok
	}
	for _, n := range names {
		resp.Identifiers = append(resp.Identifiers, append(append([]string{}, ns...), n))
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (h *Handler) loadFunction(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "function")
	if err != nil {
		return err
	}
	if err := h.require(r, authz.Describe, authz.NamespaceOf(wh, id.Namespace)); err != nil {
		return err
	}
	st, err := h.cat.LoadFunction(r.Context(), wh, id)
	if err != nil {
		return err
	}
	writeRaw(w, http.StatusOK, functionResult(st))
	return nil
}

// functionResult is a LoadFunctionResult: the metadata file as stored.
func functionResult(st *catalog.FunctionState) [][]byte {
	loc, _ := json.Marshal(st.Location)
	head := append(append([]byte(`{"metadata-location":`), loc...), `,"metadata":`...)
	return [][]byte{head, st.JSON, []byte(`}`)}
}

// isFunctionRoute reports whether an operation is one of the functions',
// which foreign catalogs do not serve.
func isFunctionRoute(name string) bool { return name == "listFunctions" || name == "loadFunction" }
