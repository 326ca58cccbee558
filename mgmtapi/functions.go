package mgmtapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// Functions creates, replaces and drops functions (user-defined functions
// in the Iceberg UDF format), which the REST spec can only list and load
// (*catalog.Catalog).
type Functions interface {
	PutFunction(ctx context.Context, wh string, id catalog.Ident, req catalog.PutFunction) (*catalog.FunctionState, bool, error)
	DropFunction(ctx context.Context, wh string, id catalog.Ident) error
}

// FunctionResult is the answer of PUT /functions/...: the REST spec's
// LoadFunctionResult.
type FunctionResult struct {
	MetadataLocation string          `json:"metadata-location"`
	Metadata         json.RawMessage `json:"metadata"`
}

func (h *Handler) functionRoutes() []route {
	const p = "/api/v1/functions/{warehouse}/{namespace}/{function}"
	return []route{
		{"PUT", p, "mgmt.function.put", h.putFunction},
		{"DELETE", p, "mgmt.function.drop", h.dropFunction},
	}
}

// function reads the function of the path, records it as the call's audit
// resource and checks that the caller may write functions in its
// namespace: CREATE_VIEW there (functions are SQL definitions, governed
// like views; there is no function securable yet).
func (h *Handler) function(c *call) (string, catalog.Ident, error) {
	wh := c.r.PathValue("warehouse")
	id := catalog.Ident{Namespace: ParseNamespace(c.r.PathValue("namespace")), Name: c.r.PathValue("function")}
	if err := id.Validate(); err != nil {
		return "", catalog.Ident{}, err
	}
	c.resource = "function:" + wh + "/" + id.String()
	if h.opts.Functions == nil {
		return "", catalog.Ident{}, floe.E(floe.Unsupported, "", "functions are not available on this server")
	}
	p, err := h.policy(c)
	if err != nil {
		return "", catalog.Ident{}, err
	}
	if err := p.Check(c.sub, authz.CreateView, authz.NamespaceOf(wh, id.Namespace)); err != nil {
		return "", catalog.Ident{}, err
	}
	return wh, id, nil
}

// putFunction creates or replaces a function with the FunctionMetadata
// JSON of the body. ?mode=create refuses an existing function (409),
// ?mode=replace a missing one (404); ?if-match=<metadata-location>
// replaces only the version the caller read (409 otherwise).
func (h *Handler) putFunction(c *call) error {
	req := catalog.PutFunction{IfMatch: c.r.URL.Query().Get("if-match")}
	switch m := c.r.URL.Query().Get("mode"); m {
	case "", "upsert":
	case "create":
		req.Create = true
	case "replace":
		req.Replace = true
	default:
		return floe.E(floe.Invalid, "", "mode %q: want create, replace or upsert", m)
	}
	if req.Create && req.IfMatch != "" {
		return floe.E(floe.Invalid, "", "if-match applies to a replace, not to mode=create")
	}
	wh, id, err := h.function(c)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(c.r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return floe.Wrap(floe.Invalid, err, "request body is larger than %d bytes", mbe.Limit)
		}
		return floe.Wrap(floe.Invalid, err, "cannot read request body")
	}
	req.Metadata = body
	c.note("mode", c.r.URL.Query().Get("mode"), "if_match", req.IfMatch != "")
	st, created, err := h.opts.Functions.PutFunction(c.ctx, wh, id, req)
	if err != nil {
		return err
	}
	c.note("created", created, "metadata_location", st.Location)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return reply(c, status, FunctionResult{MetadataLocation: st.Location, Metadata: st.JSON})
}

// dropFunction removes a function from the catalog (its files stay).
func (h *Handler) dropFunction(c *call) error {
	wh, id, err := h.function(c)
	if err != nil {
		return err
	}
	if err := h.opts.Functions.DropFunction(c.ctx, wh, id); err != nil {
		return err
	}
	return noContent(c)
}
