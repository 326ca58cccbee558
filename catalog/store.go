package catalog

import (
	"context"
	"time"

	"github.com/floe-lake/floe"
)

// Kind tells tables from views; they share one identifier space.
type Kind string

const (
	// KindTable is an Iceberg table.
	KindTable Kind = "table"
	// KindView is an Iceberg view.
	KindView Kind = "view"
)

// Warehouse is a named root location holding namespaces.
type Warehouse struct {
	Name     string
	Location string // e.g. file:///var/lib/floe/warehouse or s3://bucket/prefix
}

// Entity is the catalog's pointer to a table's or view's current metadata file.
type Entity struct {
	Warehouse        string
	Ident            Ident
	Kind             Kind
	MetadataLocation string
	UpdatedAt        time.Time
}

// Swap is one compare-and-swap of a metadata pointer. Old == "" creates the
// entity (it must not exist); otherwise the current pointer must equal Old.
type Swap struct {
	Warehouse string
	Ident     Ident
	Kind      Kind
	Old, New  string
	// Location is a table's base location (normalized); "" keeps the
	// stored one. When ClaimLocation is set (the table is new or moved),
	// the store refuses it with Invalid if another table of the warehouse
	// lies at, above or below it.
	Location      string
	ClaimLocation bool
	// Claimant is who makes a claim (ClaimLocation): a location overlapping
	// a tombstone is refused unless the claimant is its owner or an
	// administrator, in which case the claim consumes the tombstone.
	Claimant Claimant
}

// Claimant is the principal on whose behalf a table location is claimed or
// a table is dropped, as the store's location checks see it.
type Claimant struct {
	// Principal is the principal's stable id; "" for none.
	Principal string
	// Admin claimants may claim any location not held by a live table.
	Admin bool
	// CanRead says, for a drop, that the principal could read the whole
	// table's files (SELECT without a data filter): only then does it own
	// the tombstone the drop leaves.
	CanRead bool
}

// Tombstone keeps the location of a table dropped without deleting its
// files claimed: no table may be created, registered or moved at, inside
// or above it except by its owner or an administrator, whose claim
// consumes it. Released explicitly by Catalog.ReleaseTombstone.
type Tombstone struct {
	Warehouse string
	// Location is the dropped table's base location (normalized).
	Location string
	// Ident is the name the table had when it was dropped.
	Ident Ident
	// Owner is the id of the principal that may reclaim the location: the
	// dropper, when it could read the table; "" when only administrators may.
	Owner     string
	DroppedAt time.Time
	// Purge, on a drop (Store.DeleteEntity), asks the store to queue a
	// PurgeJob for Location in the same transaction (stores that
	// implement PurgeQueue).
	Purge bool
}

// Refusal is the error for a claim of loc that overlaps t by a claimant
// that neither owns t nor is an administrator.
func (t Tombstone) Refusal(loc string) error {
	return floe.E(floe.Forbidden, "location", "location %s overlaps %s, the location of dropped table %s, whose files were kept: only its previous owner or an administrator can reuse or release it", loc, t.Location, t.Ident)
}

// Permits reports whether by may claim a location overlapping t.
func (t Tombstone) Permits(by Claimant) bool {
	return by.Admin || (t.Owner != "" && t.Owner == by.Principal)
}

// Store persists the catalog. Implementations must make each method atomic.
// Errors are floe.Error values: NotFound, AlreadyExists, NotEmpty, Conflict.
type Store interface {
	// Warehouse returns the named warehouse, or NotFound.
	Warehouse(ctx context.Context, name string) (Warehouse, error)
	// PutWarehouse creates or updates a warehouse.
	PutWarehouse(ctx context.Context, w Warehouse) error

	// CreateNamespace creates ns; AlreadyExists if present, NotFound if its parent is missing.
	CreateNamespace(ctx context.Context, wh string, ns Namespace, props map[string]string) error
	// NamespaceProperties returns the properties of ns, or NotFound.
	NamespaceProperties(ctx context.Context, wh string, ns Namespace) (map[string]string, error)
	// ListNamespaces lists the direct children of parent (top level when parent is empty)
	// whose key sorts after the key `after`, at most limit of them (limit <= 0: all).
	ListNamespaces(ctx context.Context, wh string, parent Namespace, after string, limit int) ([]Namespace, error)
	// UpdateNamespaceProperties applies fn to the properties of ns inside one transaction.
	UpdateNamespaceProperties(ctx context.Context, wh string, ns Namespace, fn func(map[string]string) error) error
	// DropNamespace removes an empty namespace; NotFound or NotEmpty.
	DropNamespace(ctx context.Context, wh string, ns Namespace) error

	// Entity returns the table or view named id (either kind), or NotFound.
	Entity(ctx context.Context, wh string, id Ident) (Entity, error)
	// ListEntities lists names of the given kind in ns after `after`, at most limit (<=0: all).
	// NotFound if the namespace is missing.
	ListEntities(ctx context.Context, wh string, ns Namespace, kind Kind, after string, limit int) ([]string, error)
	// SwapPointers applies all swaps atomically or none. A pointer that
	// changed or an entity that appeared gives Conflict (or AlreadyExists for
	// a create whose name is taken); a missing namespace gives NotFound.
	SwapPointers(ctx context.Context, swaps []Swap) error
	// ReplaceEntity points id at loc whatever it pointed at before, creating it if needed.
	// tableLoc is claimed as in Swap (for tables; "" for views).
	ReplaceEntity(ctx context.Context, wh string, id Ident, kind Kind, loc, tableLoc string, by Claimant) error
	// DeleteEntity removes the entity of the given kind and returns what it
	// pointed at. A non-nil keep is stored in the same transaction (its
	// Location defaults to the table's stored location; nothing is kept
	// when both are empty).
	DeleteEntity(ctx context.Context, wh string, id Ident, kind Kind, keep *Tombstone) (Entity, error)
	// Tombstones lists the tombstones of a warehouse in location order,
	// after the location `after`, at most limit (<= 0: all).
	Tombstones(ctx context.Context, wh, after string, limit int) ([]Tombstone, error)
	// TombstonesOver returns the tombstones at, inside or above loc.
	TombstonesOver(ctx context.Context, wh, loc string) ([]Tombstone, error)
	// DeleteTombstone removes the tombstone at loc and returns it: NotFound
	// (entity "tombstone").
	DeleteTombstone(ctx context.Context, wh, loc string) (Tombstone, error)
	// RenameEntity moves an entity; NotFound for a missing source or
	// destination namespace, AlreadyExists if the destination name is taken.
	RenameEntity(ctx context.Context, wh string, from, to Ident, kind Kind) error
}
