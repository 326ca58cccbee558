package restcat

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// filterWarner reports what is wrong with a grant's data filter
// (*authz.Authorizer).
type filterWarner interface {
	FilterWarnings(ctx context.Context, p *authz.Policy, g *authz.Grant) []string
}

// FilterWarningHeader is the response header of a commit that broke a data
// filter on the table, one per broken filter: the commit is applied, and
// reads through the filter fail closed until its grant is replaced.
const FilterWarningHeader = "X-Floe-Warning"

// maxFilterWarnings bounds the warnings one commit reports.
const maxFilterWarnings = 16

// reportBrokenFilters tells, after a commit that changed the schema of
// table id, about each data filter of a grant on the table that now refers
// to a column the table no longer has: a WARN log line, an
// authz.filter_broken audit event and a response header.
func (h *Handler) reportBrokenFilters(w http.ResponseWriter, r *http.Request, wh string, tc catalog.TableCommit) {
	fw, ok := h.opts.Authz.(filterWarner)
	if !ok || !slices.ContainsFunc(tc.Updates, func(u table.Update) bool {
		a := u.Action()
		return a == table.UpdateAddSchema || a == table.UpdateSetCurrentSchema
	}) {
		return
	}
	ctx := r.Context()
	p, err := h.opts.Authz.Policy(ctx)
	if err != nil {
		return
	}
	s := authz.Table(wh, tc.Ident)
	n := 0
	for _, g := range p.Grants(func(g *authz.Grant) bool {
		return g.Filter != nil && g.On.Kind == authz.KindTable && g.On.Warehouse == wh && g.On.Path() == s.Path()
	}) {
		for _, msg := range fw.FilterWarnings(ctx, p, &g) {
			if n++; n > maxFilterWarnings {
				return
			}
			text := "grant " + g.ID + " (" + g.Describe() + "): " + msg
			h.log.WarnContext(ctx, "a commit broke a data filter; reads through it are refused until the grant is replaced",
				"table", wh+"."+tc.Ident.String(), "grant", g.ID, "warning", msg)
			w.Header().Add(FilterWarningHeader, strings.Map(func(r rune) rune {
				if r < 0x20 || r >= 0x7f {
					return '?'
				}
				return r
			}, text))
			if h.opts.Audit != nil {
				h.opts.Audit(context.WithoutCancel(ctx), audit.Event{RequestID: requestID(ctx), Action: "authz.filter_broken",
					Resource: "table:" + wh + "/" + tc.Ident.String(), Outcome: audit.OutcomeFailure,
					Detail: map[string]any{"grant": g.ID, "grant_desc": g.Describe(), "reason": msg, "by": "commit"}})
			}
		}
	}
}
