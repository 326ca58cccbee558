package catalog

import (
	"context"
	"maps"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/floe-lake/floe"
)

// CreateTableRequest describes a new table.
type CreateTableRequest struct {
	Name       string
	Schema     *iceberg.Schema
	Spec       *iceberg.PartitionSpec // nil: unpartitioned
	SortOrder  *table.SortOrder       // nil: unsorted
	Location   string                 // "": a fresh location inside the warehouse
	Properties map[string]string
	// Stage returns initial metadata without creating the table; the client
	// later commits it with an assert-create requirement.
	Stage bool
}

// CreateTable creates (or stages) a table in ns.
func (c *Catalog) CreateTable(ctx context.Context, wh string, ns Namespace, req CreateTableRequest) (*TableState, error) {
	id := Ident{Namespace: ns, Name: req.Name}
	if req.Schema == nil {
		return nil, floe.E(floe.Invalid, "table", "schema is required")
	}
	tid, loc, err := c.placeNew(ctx, wh, id, KindTable, req.Location)
	if err != nil {
		return nil, err
	}
	spec := iceberg.UnpartitionedSpec
	if req.Spec != nil {
		spec = req.Spec
	}
	order := table.UnsortedSortOrder
	if req.SortOrder != nil {
		order = *req.SortOrder
	}
	props := iceberg.Properties{}
	maps.Copy(props, req.Properties)
	md, err := newMetadata(req.Schema, spec, order, loc, props, tid)
	if err != nil {
		return nil, err
	}
	raw, err := encodeMetadata(md)
	if err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "cannot encode table metadata")
	}
	st := &TableState{Metadata: md, JSON: raw}
	if req.Stage {
		return st, nil
	}
	st.Location = nextMetadataLocation(loc, "")
	if err := c.io.WriteFile(ctx, st.Location, raw); err != nil {
		return nil, err
	}
	if err := c.store.SwapPointers(ctx, []Swap{{Warehouse: wh, Ident: id, Kind: KindTable, New: st.Location, Location: loc,
		ClaimLocation: true, Claimant: ClaimantOf(ctx)}}); err != nil {
		c.discard(ctx, st.Location)
		if k := floe.KindOf(err); k == floe.AlreadyExists || k == floe.Conflict {
			have := KindTable
			if floe.EntityOf(err) == "view" {
				have = KindView
			}
			return nil, alreadyExists(KindTable, have, id)
		}
		return nil, err
	}
	c.remember(st)
	return st, nil
}

// placeNew checks that a new table or view may be created as id and returns
// its UUID and normalized location (loc, or a fresh one inside the
// warehouse). A table location the client chose must be empty unless the
// claimant may lay a table over files (checkFreshLocation).
func (c *Catalog) placeNew(ctx context.Context, wh string, id Ident, kind Kind, loc string) (uuid.UUID, string, error) {
	if err := id.Validate(); err != nil {
		return uuid.Nil, "", err
	}
	w, err := c.store.Warehouse(ctx, wh)
	if err != nil {
		return uuid.Nil, "", err
	}
	if _, err := c.store.NamespaceProperties(ctx, wh, id.Namespace); err != nil {
		return uuid.Nil, "", err
	}
	if ent, err := c.store.Entity(ctx, wh, id); err == nil {
		return uuid.Nil, "", alreadyExists(kind, ent.Kind, id)
	}
	u := uuid.New()
	chosen := loc != ""
	if !chosen {
		loc = defaultTableLocation(w, id, u)
	}
	if kind != KindTable {
		loc, err = c.checkLocation(w, loc)
		return u, loc, err
	}
	if loc, err = c.checkTableLocation(w, loc); err != nil {
		return uuid.Nil, "", err
	}
	if chosen {
		if err := c.checkFreshLocation(ctx, w, id, loc, ""); err != nil {
			return uuid.Nil, "", err
		}
	}
	return u, loc, nil
}

// newMetadata wraps table.NewMetadataWithUUID, mapping its validation errors to Invalid.
func newMetadata(sc *iceberg.Schema, spec *iceberg.PartitionSpec, order table.SortOrder, loc string, props iceberg.Properties, id uuid.UUID) (md table.Metadata, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = floe.E(floe.Invalid, "table", "invalid table definition: %v", r)
		}
	}()
	md, err = table.NewMetadataWithUUID(sc, spec, order, loc, props, id)
	if err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "invalid table definition: %s", err)
	}
	return md, nil
}

// LoadTable returns the current metadata of a table.
func (c *Catalog) LoadTable(ctx context.Context, wh string, id Ident) (*TableState, error) {
	ent, err := c.entity(ctx, wh, id, KindTable)
	if err != nil {
		return nil, err
	}
	return c.loadTableState(ctx, ent.MetadataLocation)
}

// TableLocationInfo returns the pointer of a table without reading its metadata.
func (c *Catalog) TableLocationInfo(ctx context.Context, wh string, id Ident) (Entity, error) {
	return c.entity(ctx, wh, id, KindTable)
}

// LoadTableAt returns the metadata at a known location (for If-None-Match and caches).
func (c *Catalog) LoadTableAt(ctx context.Context, loc string) (*TableState, error) {
	return c.loadTableState(ctx, loc)
}

// DropTable removes a table; with purge its files are deleted too. The
// table's location stays claimed by a tombstone (see Tombstone) unless the
// purge deleted all of it; the tombstone's owner is the claimant
// (ClaimantOf) when it could read the table or is an administrator.
//
// When the store keeps purge jobs (PurgeQueue), a purge is queued in the
// drop's own transaction and run: up to Options.PurgeInlineFiles files
// before DropTable returns, the rest by the purge worker (RunPurges). It
// deletes every file the table's metadata files reference inside its
// location, then everything else under the location (see purgeRun).
func (c *Catalog) DropTable(ctx context.Context, wh string, id Ident, purge bool) error {
	ent, err := c.entity(ctx, wh, id, KindTable)
	if err != nil {
		return err
	}
	keep := c.tombstoneFor(ctx, ent)
	q, queued := c.store.(PurgeQueue)
	keep.Purge = purge && queued && c.purgeable(ctx, wh, keep.Location)
	if ent, err = c.store.DeleteEntity(ctx, wh, id, KindTable, keep); err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return notExist(KindTable, id)
		}
		return err
	}
	if keep.Purge {
		c.purgeDropped(ctx, q, wh, keep.Location)
		return nil
	}
	if purge && c.purge(ctx, wh, ent) && keep.Location != "" {
		if _, err := c.store.DeleteTombstone(context.WithoutCancel(ctx), wh, keep.Location); err != nil && floe.KindOf(err) != floe.NotFound {
			c.log.WarnContext(ctx, "purge: cannot release the purged location", "location", keep.Location, "err", err)
		}
	}
	return nil
}

// tombstoneFor returns the tombstone a drop of ent leaves: its location
// (from its metadata; "" lets the store use the one it has) and owner.
func (c *Catalog) tombstoneFor(ctx context.Context, ent Entity) *Tombstone {
	t := &Tombstone{Warehouse: ent.Warehouse, Ident: ent.Ident}
	if st, err := c.loadTableState(ctx, ent.MetadataLocation); err == nil {
		if loc, err := normalizeLocation(st.Metadata.Location()); err == nil {
			t.Location = loc
		}
	}
	if by := ClaimantOf(ctx); by.Admin || by.CanRead {
		t.Owner = by.Principal
	}
	return t
}

// purge deletes a dropped table's files: everything its metadata references,
// and its whole location when that location is one Floe assigned to it. It
// reports whether it deleted the whole location.
func (c *Catalog) purge(ctx context.Context, wh string, ent Entity) bool {
	st, err := c.loadTableState(ctx, ent.MetadataLocation)
	if err != nil {
		c.log.WarnContext(ctx, "purge: cannot read metadata", "table", ent.Ident.String(), "err", err)
		return false
	}
	w, err := c.store.Warehouse(ctx, wh)
	if err != nil {
		return false
	}
	loc, err := c.checkLocation(w, st.Metadata.Location())
	suffix := "-" + strings.ReplaceAll(st.Metadata.TableUUID().String(), "-", "")
	if err == nil && strings.HasSuffix(loc, suffix) {
		if err := c.io.DeletePrefix(ctx, loc); err != nil {
			c.log.WarnContext(ctx, "purge: delete failed", "location", loc, "err", err)
			return false
		}
		return true
	}
	// A registered table at a foreign location: delete only its metadata files.
	for e := range st.Metadata.PreviousFiles() {
		c.discard(ctx, e.MetadataFile)
	}
	c.discard(ctx, ent.MetadataLocation)
	return false
}

// purgeable reports whether loc may be purged as a table location of wh:
// inside the warehouse, neither its root nor Floe's reserved directory.
func (c *Catalog) purgeable(ctx context.Context, wh, loc string) bool {
	if loc == "" {
		return false
	}
	w, err := c.store.Warehouse(ctx, wh)
	if err != nil {
		return false
	}
	n, err := checkTableLocation(w, loc)
	return err == nil && n == loc
}

func (c *Catalog) discard(ctx context.Context, loc string) {
	if err := c.io.Delete(ctx, loc); err != nil {
		c.log.WarnContext(ctx, "cannot delete file", "location", loc, "err", err)
	}
}

// checkRegister validates a register request: the identifier, the
// warehouse, that the metadata file lies inside it, and that the namespace
// exists. It returns the warehouse and the normalized metadata location.
func (c *Catalog) checkRegister(ctx context.Context, wh string, id Ident, metadataLocation string) (Warehouse, string, error) {
	if err := id.Validate(); err != nil {
		return Warehouse{}, "", err
	}
	w, err := c.store.Warehouse(ctx, wh)
	if err != nil {
		return Warehouse{}, "", err
	}
	loc, err := c.checkLocation(w, metadataLocation)
	if err != nil {
		return Warehouse{}, "", err
	}
	if _, err := c.store.NamespaceProperties(ctx, wh, id.Namespace); err != nil {
		return Warehouse{}, "", err
	}
	return w, loc, nil
}

// RegisterTable adds a table whose metadata file already exists.
func (c *Catalog) RegisterTable(ctx context.Context, wh string, id Ident, metadataLocation string, overwrite bool) (*TableState, error) {
	w, loc, err := c.checkRegister(ctx, wh, id, metadataLocation)
	if err != nil {
		return nil, err
	}
	ent, err := c.store.Entity(ctx, wh, id)
	exists := err == nil
	if exists && (!overwrite || ent.Kind != KindTable) {
		return nil, alreadyExists(KindTable, ent.Kind, id)
	}
	st, err := c.loadTableState(ctx, loc)
	if err != nil {
		return nil, err
	}
	tableLoc, err := c.checkTableLocation(w, st.Metadata.Location())
	if err != nil {
		return nil, err
	}
	if err := c.checkFiles(ctx, nil, st.Metadata); err != nil {
		return nil, err
	}
	if overwrite {
		err = c.store.ReplaceEntity(ctx, wh, id, KindTable, loc, tableLoc, ClaimantOf(ctx))
	} else {
		err = c.store.SwapPointers(ctx, []Swap{{Warehouse: wh, Ident: id, Kind: KindTable, New: loc, Location: tableLoc,
			ClaimLocation: true, Claimant: ClaimantOf(ctx)}})
		if floe.KindOf(err) == floe.AlreadyExists || floe.KindOf(err) == floe.Conflict {
			err = alreadyExists(KindTable, KindTable, id)
		}
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// UnregisterTable removes a table from the catalog and keeps its files,
// and its location claimed by a tombstone as DropTable does.
func (c *Catalog) UnregisterTable(ctx context.Context, wh string, id Ident) (*TableState, error) {
	ent, err := c.entity(ctx, wh, id, KindTable)
	if err != nil {
		return nil, err
	}
	st, err := c.loadTableState(ctx, ent.MetadataLocation)
	if err != nil {
		return nil, err
	}
	if _, err := c.store.DeleteEntity(ctx, wh, id, KindTable, c.tombstoneFor(ctx, ent)); err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return nil, notExist(KindTable, id)
		}
		return nil, err
	}
	return st, nil
}
