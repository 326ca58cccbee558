package app

import (
	"context"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/mgmtapi"
	"github.com/floe-lake/floe/products"
)

// cleanroomTables is the clean room service's view of the catalog: a
// table's top-level columns.
type cleanroomTables struct{ cat *catalog.Catalog }

func (t cleanroomTables) Columns(ctx context.Context, wh string, id catalog.Ident) ([]string, error) {
	return productOutputs(t).Columns(ctx, wh, products.Port{Kind: products.PortTable, Namespace: id.Namespace, Table: id.Name})
}

// newCleanRooms builds the clean room service; nil without
// authentication (insecure_no_auth): a clean room needs principals and
// grants.
func (a *App) newCleanRooms() *cleanroom.Service {
	if a.cfg.InsecureNoAuth {
		return nil
	}
	return cleanroom.New(cleanroom.Options{
		Store: a.store, Budgets: a.store, Templates: a.store, Policies: a.authz, Tables: cleanroomTables{a.cat}, Subject: a.productSubject, Log: a.log,
	})
}

// CleanRooms is the clean room service (nil under insecure_no_auth).
func (a *App) CleanRooms() *cleanroom.Service { return a.cleanrooms }

// cleanRoomsAPI is the service for the management API: a nil interface
// when there is none.
func (a *App) cleanRoomsAPI() mgmtapi.CleanRooms {
	if a.cleanrooms == nil {
		return nil
	}
	return a.cleanrooms
}
