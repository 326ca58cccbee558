package restcat

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/view"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

type createViewRequest struct {
	Name        string            `json:"name"`
	Location    string            `json:"location"`
	Schema      *iceberg.Schema   `json:"schema"`
	ViewVersion *view.Version     `json:"view-version"`
	Properties  map[string]string `json:"properties"`
}

type commitViewRequest struct {
	Identifier   *tableIdentifier  `json:"identifier"`
	Requirements view.Requirements `json:"requirements"`
	Updates      view.Updates      `json:"updates"`
}

type registerViewRequest struct {
	Name             string `json:"name"`
	MetadataLocation string `json:"metadata-location"`
}

func viewResult(st *catalog.ViewState) [][]byte {
	loc, _ := json.Marshal(st.Location)
	head := append(append([]byte(`{"metadata-location":`), loc...), `,"metadata":`...)
	return [][]byte{head, st.JSON, []byte(`,"config":{}}`)}
}

func (h *Handler) createView(w http.ResponseWriter, r *http.Request) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil {
		return err
	}
	var req createViewRequest
	if err := readJSON(r, &req, "name", "schema", "view-version", "properties"); err != nil {
		return err
	}
	if err := h.require(r, authz.CreateView, authz.NamespaceOf(wh, ns)); err != nil {
		return err
	}
	if err := h.checkDefiner(r, req.ViewVersion); err != nil {
		return err
	}
	st, err := h.cat.CreateView(r.Context(), wh, ns, catalog.CreateViewRequest{
		Name: req.Name, Location: req.Location, Schema: req.Schema, Version: req.ViewVersion, Properties: req.Properties,
	})
	if err != nil {
		return err
	}
	h.owned(r, authz.View(wh, catalog.Ident{Namespace: ns, Name: req.Name}))
	writeRaw(w, http.StatusOK, viewResult(st))
	return nil
}

func (h *Handler) loadView(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "view")
	if err != nil {
		return err
	}
	if err := h.require(r, authz.Describe, authz.View(wh, id)); err != nil {
		return err
	}
	st, err := h.cat.LoadView(r.Context(), wh, id)
	if err != nil {
		return err
	}
	writeRaw(w, http.StatusOK, viewResult(st))
	return nil
}

func (h *Handler) replaceView(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "view")
	if err != nil {
		return err
	}
	if err := h.require(r, authz.Modify, authz.View(wh, id)); err != nil {
		return err
	}
	var req commitViewRequest
	if err := readJSON(r, &req, "updates"); err != nil {
		return err
	}
	if req.Identifier != nil {
		bid, err := req.Identifier.ident()
		if err != nil {
			return err
		}
		if bid.Namespace.Key() != id.Namespace.Key() || bid.Name != id.Name {
			return floe.E(floe.Invalid, "", "identifier %s in the body does not match the path %s", bid, id)
		}
	}
	for _, u := range req.Updates {
		// add-view-version updates (the type is iceberg-go's own).
		raw, err := json.Marshal(u)
		if err != nil {
			return fmt.Errorf("restcat: view update: %w", err)
		}
		var add struct {
			Action  string        `json:"action"`
			Version *view.Version `json:"view-version"`
		}
		if err := json.Unmarshal(raw, &add); err != nil {
			return fmt.Errorf("restcat: view update: %w", err)
		}
		if err := h.checkDefiner(r, add.Version); err != nil {
			return err
		}
	}
	st, err := h.cat.ReplaceView(r.Context(), wh, id, catalog.ViewCommit{Requirements: req.Requirements, Updates: req.Updates})
	if err != nil {
		return err
	}
	writeRaw(w, http.StatusOK, viewResult(st))
	return nil
}

// DefinerSummary is the view version summary key naming the principal
// whose rights a SECURITY DEFINER view reads with (the SQL endpoint's
// engine.DefinerSummary).
const DefinerSummary = "floe.definer"

// checkDefiner refuses a view version that names a principal other than
// the caller as its definer: only the principal itself (or an
// administrator) may write SQL that runs with its rights.
func (h *Handler) checkDefiner(r *http.Request, v *view.Version) error {
	if v == nil {
		return nil
	}
	definer, ok := v.Summary[DefinerSummary]
	if !ok {
		return nil
	}
	c, err := h.caller(r)
	if err != nil || c.unrestricted {
		return err
	}
	if definer != c.sub.Principal {
		return floe.E(floe.Forbidden, "privilege", "a view version naming %q as its definer (summary %s) may be written by that principal only, not by %s",
			definer, DefinerSummary, c.sub)
	}
	return nil
}

func (h *Handler) dropView(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "view")
	if err != nil {
		return err
	}
	if err := h.require(r, authz.Drop, authz.View(wh, id)); err != nil {
		return err
	}
	if err := h.cat.DropView(r.Context(), wh, id); err != nil {
		return err
	}
	h.dropped(r, authz.View(wh, id))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) registerView(w http.ResponseWriter, r *http.Request) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil {
		return err
	}
	var req registerViewRequest
	if err := readJSON(r, &req, "name", "metadata-location"); err != nil {
		return err
	}
	if err := h.require(r, authz.CreateView, authz.NamespaceOf(wh, ns)); err != nil {
		return err
	}
	id := catalog.Ident{Namespace: ns, Name: req.Name}
	st, err := h.cat.RegisterView(r.Context(), wh, id, req.MetadataLocation)
	if err != nil {
		return err
	}
	for _, v := range st.Metadata.Versions() {
		if err := h.checkDefiner(r, v); err != nil {
			if derr := h.cat.DropView(r.Context(), wh, id); derr != nil {
				return errors.Join(err, derr)
			}
			return err
		}
	}
	h.owned(r, authz.View(wh, id))
	writeRaw(w, http.StatusOK, viewResult(st))
	return nil
}
