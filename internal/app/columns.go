package app

import (
	"context"

	"github.com/apache/iceberg-go/table"

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

// bindBeforeSchemaChange binds the data filters and column tags that may
// apply to a table to its field ids before a commit changes its schema
// (catalog.Options.BeforeSchemaChange).
func (a *App) bindBeforeSchemaChange(ctx context.Context, wh string, id catalog.Ident, md table.Metadata) error {
	return a.authz.BindTable(ctx, wh, id, authz.ColumnsOf(md))
}
