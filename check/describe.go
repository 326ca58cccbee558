package check

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// checkDescribe (S7): the identity a federating engine uses can DESCRIBE —
// list namespaces and tables and load table metadata — not only one or
// the other (the seed's GetDatabases failure: loads work, listing is
// forbidden or empty, so the engine sees no database).
func (r *run) checkDescribe(ctx context.Context) {
	tok, who := r.token, "the checking identity"
	switch {
	case r.o.FederationToken != "":
		tok, who = r.o.FederationToken, "the federation identity"
	case r.o.FederationCredential != "":
		ta, a := r.clientToken(ctx, r.o.FederationCredential, "catalog")
		if a.status != http.StatusOK || ta.AccessToken == "" {
			r.add("S7", "s7.describe", Fail, "the federation credential gets no token: %s", a.describe())
			return
		}
		tok, who = ta.AccessToken, "the federation identity"
	}
	if len(r.tables) == 0 {
		r.add("S7", "s7.describe", Skip, "no table known to load (give one with --table ns.name)")
		return
	}
	t := r.tables[0]
	_, la := r.loadTable(ctx, tok, t.ns, t.name, nil)
	loads := la.err == nil && la.status == http.StatusOK
	nss, na := r.listNamespaces(ctx, tok, nil)
	listed := na.err == nil && na.status == http.StatusOK
	nsVisible := listed && slices.ContainsFunc(nss, func(ns []string) bool { return len(ns) > 0 && ns[0] == t.ns[0] })
	tablesVisible := false
	if nsVisible {
		names, ta := r.listIdents(ctx, tok, t.ns, "tables")
		tablesVisible = ta.err == nil && ta.status == http.StatusOK && slices.Contains(names, t.name)
	}
	lsEvidence := fmt.Sprintf("listNamespaces %s (%d namespaces)", na.describe(), len(nss))
	switch {
	case loads && (!listed || !nsVisible):
		r.add("S7", "s7.describe", Fail, "%s loads %s but cannot see namespace %s: %s", who, t, strings.Join(t.ns, "."), lsEvidence)
	case loads && !tablesVisible:
		r.add("S7", "s7.describe", Fail, "%s loads %s but listTables of %s does not show it", who, t, strings.Join(t.ns, "."))
	case !loads && tablesVisible:
		r.add("S7", "s7.describe", Fail, "%s lists %s but cannot load it: %s", who, t, la.describe())
	case !loads:
		r.add("S7", "s7.describe", Fail, "%s can neither list nor load %s: loadTable %s, %s", who, t, la.describe(), lsEvidence)
	default:
		r.add("S7", "s7.describe", Pass, "%s lists namespace %s, lists and loads %s", who, strings.Join(t.ns, "."), t)
	}
}
