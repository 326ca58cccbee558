// Package bypass commits table metadata below the catalog's checks, for
// tests that need a table as it could exist before a check was added (for
// example one whose metadata references files outside its location): the
// new metadata file is written through the catalog's FileIO and the
// table's pointer moved directly in the store.
package bypass

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/floe-lake/floe/catalog"
)

// Tables implements lake.Tables: LoadTable goes through the catalog,
// CommitTable applies the updates without any of the catalog's checks
// (requirements are ignored too).
type Tables struct {
	Cat   *catalog.Catalog
	Store catalog.Store
	IO    catalog.FileIO
}

// LoadTable returns the table's current state from the catalog.
func (b Tables) LoadTable(ctx context.Context, wh string, id catalog.Ident) (*catalog.TableState, error) {
	return b.Cat.LoadTable(ctx, wh, id)
}

// CommitTable applies tc's updates to the current metadata, writes the
// result next to it and swaps the pointer in the store.
func (b Tables) CommitTable(ctx context.Context, wh string, tc catalog.TableCommit) (*catalog.TableState, error) {
	cur, err := b.Cat.LoadTable(ctx, wh, tc.Ident)
	if err != nil {
		return nil, err
	}
	bld, err := table.MetadataBuilderFromBase(cur.Metadata, cur.Location)
	if err != nil {
		return nil, fmt.Errorf("bypass: builder: %w", err)
	}
	for _, u := range tc.Updates {
		if err := u.Apply(bld); err != nil {
			return nil, fmt.Errorf("bypass: %s: %w", u.Action(), err)
		}
	}
	md, err := bld.Build()
	if err != nil {
		return nil, fmt.Errorf("bypass: build: %w", err)
	}
	raw, err := json.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("bypass: encode: %w", err)
	}
	loc := fmt.Sprintf("%s/metadata/bypass-%s.metadata.json", md.Location(), uuid.New())
	if err := b.IO.WriteFile(ctx, loc, raw); err != nil {
		return nil, fmt.Errorf("bypass: write: %w", err)
	}
	if err := b.Store.SwapPointers(ctx, []catalog.Swap{{Warehouse: wh, Ident: tc.Ident, Kind: catalog.KindTable, Old: cur.Location, New: loc}}); err != nil {
		return nil, fmt.Errorf("bypass: swap: %w", err)
	}
	return b.Cat.LoadTable(ctx, wh, tc.Ident)
}
