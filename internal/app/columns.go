package app

import (
	"context"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// tableColumns gives authz the columns of a table, so that a grant's data
// filter and a column tag are bound to field ids as they are made.
type tableColumns struct{ cat *catalog.Catalog }

// TableColumns implements authz.TableColumnsSource.
func (t tableColumns) TableColumns(ctx context.Context, wh string, id catalog.Ident) (*authz.TableColumns, error) {
	ts, err := t.cat.LoadTable(ctx, wh, id)
	if err != nil {
		return nil, err
	}
	return authz.ColumnsOf(ts.Metadata), nil
}
