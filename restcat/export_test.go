package restcat

import (
	"context"
	"encoding/json"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake/rowproof"
)

// PlanAsFiltered plans a scan of table id (request body body) as a caller
// whose row policy is rowFilter ("" for a whole-table reader), without the
// plan cache, for benchmarks: the data files listed and withheld.
func PlanAsFiltered(ctx context.Context, h *Handler, wh string, id catalog.Ident, body, rowFilter string) (listed, withheld int, err error) {
	st, err := h.cat.LoadTable(ctx, wh, id)
	if err != nil {
		return 0, 0, err
	}
	var req planRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		return 0, 0, err
	}
	key, scan, err := h.scanOf(st, id, req)
	if err != nil {
		return 0, 0, err
	}
	var pol *planPolicy
	if rowFilter != "" {
		schema := st.Metadata.CurrentSchema()
		f, err := rowproof.Compile([]string{rowFilter}, func(ref string) (rowproof.Column, bool) {
			fd, ok := schema.FindFieldByNameCaseInsensitive(ref)
			return rowproof.Column{ID: fd.ID, Type: fd.Type}, ok
		})
		if err != nil {
			return 0, 0, err
		}
		pol = &planPolicy{filter: f, canon: f.String(), refuse: func(why string) error { return context.Canceled }}
	}
	key.policy = pol.key()
	res, err := h.plan(ctx, st, key, scan, pol)
	if err != nil {
		return 0, 0, err
	}
	return res.dataFiles, res.withheld, nil
}
