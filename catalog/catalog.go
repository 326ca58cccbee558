package catalog

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/ocfscan"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNoSuchWarehouse is returned when a warehouse name is unknown.
	ErrNoSuchWarehouse = &floe.Error{Kind: floe.NotFound, Entity: "warehouse"}
	// ErrNoSuchNamespace is returned when a namespace does not exist.
	ErrNoSuchNamespace = &floe.Error{Kind: floe.NotFound, Entity: "namespace"}
	// ErrNoSuchTable is returned when a table does not exist.
	ErrNoSuchTable = &floe.Error{Kind: floe.NotFound, Entity: "table"}
	// ErrNoSuchView is returned when a view does not exist.
	ErrNoSuchView = &floe.Error{Kind: floe.NotFound, Entity: "view"}
	// ErrNotFound is returned when a metadata file cannot be read.
	ErrNotFound = &floe.Error{Kind: floe.NotFound, Entity: "file"}
	// ErrCommitFailed is returned when a commit requirement fails.
	ErrCommitFailed = &floe.Error{Kind: floe.Conflict, Entity: "commit"}
)

// Options configures a Catalog. Zero values mean defaults.
type Options struct {
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// CommitRetries is how often a commit whose pointer swap lost a race is
	// re-applied on fresh metadata before answering Conflict (default 4).
	CommitRetries int
	// MetadataCacheEntries bounds the cache of parsed metadata files (default 4096).
	MetadataCacheEntries int
	// MetadataCacheBytes bounds the estimated resident memory of that cache,
	// parsed metadata included (default 96 MiB; see metaCache).
	MetadataCacheBytes int64
	// BeforeSchemaChange, when set, is called with a table's current
	// metadata before a commit that adds, selects or removes a schema is
	// written; an error fails the commit. Authorization uses it to bind the
	// column names of data filters and column tags to field ids while the
	// names still mean what they meant.
	BeforeSchemaChange func(ctx context.Context, wh string, id Ident, current table.Metadata) error
	// AllowedLocations are storage location prefixes, besides each
	// warehouse's own root, where table and view locations (and namespace
	// "location" properties) may lie, e.g. file:///srv/lake or
	// s3://other-bucket/prefix. Empty: the warehouse root only. Entries are
	// normalized with NormalizeAllowedLocations; an invalid one is ignored
	// (configuration rejects it first).
	AllowedLocations []string
	// PurgeInlineFiles is how many files a drop with purge deletes before
	// it answers (default DefaultPurgeInlineFiles; negative: none); the
	// rest is left to the purge worker (RunPurges).
	PurgeInlineFiles int
	// PurgeLeaseTTL is how long a purge run holds its job without renewing
	// it (default DefaultPurgeLeaseTTL).
	PurgeLeaseTTL time.Duration
	// Observe, if set, is told of commit outcomes and metadata cache
	// lookups (metrics); nil: nobody.
	Observe Observer
	// PurgeHook, if set, runs before each file or location a purge
	// deletes; an error stops the run there (tests use it to stop a
	// purge midway).
	PurgeHook func(ctx context.Context, file string) error
	// PurgeBatch bounds the files a purge deletes between two checkpoints
	// and holds in memory at once (default DefaultPurgeBatch).
	PurgeBatch int
	// Node names this node as the holder of the purge jobs it runs
	// (default: hostname-<random>).
	Node string
}

// Catalog is the catalog service. It is safe for concurrent use.
type Catalog struct {
	store   Store
	io      FileIO
	log     *slog.Logger
	now     func() time.Time
	retries int
	cache   *metaCache
	checked *checkedLists // manifest lists whose files were checked
	allowed []string      // normalized Options.AllowedLocations
	scanner *ocfscan.Scanner
	purges  *purger
	// observe is Options.Observe (never nil).
	observe Observer
	// beforeSchemaChange is Options.BeforeSchemaChange.
	beforeSchemaChange func(ctx context.Context, wh string, id Ident, current table.Metadata) error
}

// New returns a Catalog over store and io.
func New(store Store, io FileIO, opts Options) *Catalog {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CommitRetries <= 0 {
		opts.CommitRetries = 4
	}
	if opts.MetadataCacheEntries <= 0 {
		opts.MetadataCacheEntries = 4096
	}
	if opts.MetadataCacheBytes <= 0 {
		opts.MetadataCacheBytes = 96 << 20
	}
	if opts.Observe == nil {
		opts.Observe = noObserver{}
	}
	allowed := make([]string, 0, len(opts.AllowedLocations))
	for _, l := range opts.AllowedLocations {
		if n, err := NormalizeAllowedLocations([]string{l}); err == nil {
			allowed = append(allowed, n...)
		}
	}
	return &Catalog{store: store, io: io, log: opts.Logger, now: opts.Now, allowed: allowed,
		retries: opts.CommitRetries, cache: newMetaCache(opts.MetadataCacheEntries, opts.MetadataCacheBytes),
		checked: newCheckedLists(checkedListEntries, checkedListPaths),
		scanner: ocfscan.New(ocfscan.DefaultSchemas),
		purges:  newPurger(opts),

		observe:            opts.Observe,
		beforeSchemaChange: opts.BeforeSchemaChange}
}

// Warehouse returns the named warehouse.
func (c *Catalog) Warehouse(ctx context.Context, name string) (Warehouse, error) {
	return c.store.Warehouse(ctx, name)
}

// CreateNamespace creates ns with properties.
func (c *Catalog) CreateNamespace(ctx context.Context, wh string, ns Namespace, props map[string]string) error {
	if err := ns.Validate(); err != nil {
		return err
	}
	if props == nil {
		props = map[string]string{}
	}
	if err := c.checkNamespaceLocation(ctx, wh, props); err != nil {
		return err
	}
	err := c.store.CreateNamespace(ctx, wh, ns, props)
	if floe.KindOf(err) == floe.NotFound && floe.EntityOf(err) == "namespace" {
		// createNamespace has no 404 in the spec: a missing parent is a bad request.
		return &floe.Error{Kind: floe.Invalid, Entity: "namespace", Msg: floe.PublicMessage(err) + " (create the parent namespace first)", Err: err}
	}
	return err
}

// checkNamespaceLocation requires a namespace's "location" property, when
// props sets one, inside the warehouse or an allowed storage location.
func (c *Catalog) checkNamespaceLocation(ctx context.Context, wh string, props map[string]string) error {
	loc, ok := props["location"]
	if !ok {
		return nil
	}
	w, err := c.store.Warehouse(ctx, wh)
	if err != nil {
		return err
	}
	_, err = c.checkLocation(w, loc)
	return err
}

// NamespaceProperties returns the stored properties of ns (LoadNamespace
// adds the default location that clients are answered).
func (c *Catalog) NamespaceProperties(ctx context.Context, wh string, ns Namespace) (map[string]string, error) {
	if err := ns.Validate(); err != nil {
		return nil, err
	}
	return c.store.NamespaceProperties(ctx, wh, ns)
}

// LoadNamespace returns the properties of ns as clients are answered them:
// a namespace without a location property answers the directory in which
// Floe places its tables (see WithDefaultLocation).
func (c *Catalog) LoadNamespace(ctx context.Context, wh string, ns Namespace) (map[string]string, error) {
	props, err := c.NamespaceProperties(ctx, wh, ns)
	if err != nil {
		return nil, err
	}
	return c.WithDefaultLocation(ctx, wh, ns, props)
}

// WithDefaultLocation returns props with the location property set to
// ns's default location, <warehouse location>/<namespace levels>, when
// props has none; props itself is not changed. Engines that place a table
// themselves (Trino puts it at <namespace location>/<name>-<random>, and
// without a namespace location creates it unstaged and then refuses the
// location Floe just wrote its metadata into) need one, as Apache Iceberg's
// reference catalog answers. The default is computed, not stored, so it
// follows the warehouse's location.
func (c *Catalog) WithDefaultLocation(ctx context.Context, wh string, ns Namespace, props map[string]string) (map[string]string, error) {
	if props[LocationProperty] != "" {
		return props, nil
	}
	w, err := c.store.Warehouse(ctx, wh)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(props)+1)
	maps.Copy(out, props)
	loc := defaultNamespaceLocation(w, ns)
	if n, err := normalizeLocation(loc); err == nil {
		loc = n // spelled as the locations of the tables Floe places in it
	}
	out[LocationProperty] = loc
	return out, nil
}

// ListNamespaces lists direct children of parent after the key `after`.
// A parent that does not exist gives NotFound.
func (c *Catalog) ListNamespaces(ctx context.Context, wh string, parent Namespace, after string, limit int) ([]Namespace, error) {
	if len(parent) > 0 {
		if _, err := c.NamespaceProperties(ctx, wh, parent); err != nil {
			return nil, err
		}
	}
	return c.store.ListNamespaces(ctx, wh, parent, after, limit)
}

// PropertiesUpdate is the outcome of UpdateNamespaceProperties.
type PropertiesUpdate struct {
	Updated, Removed, Missing []string
}

// UpdateNamespaceProperties removes and sets properties. A key in both lists is Unprocessable.
func (c *Catalog) UpdateNamespaceProperties(ctx context.Context, wh string, ns Namespace, removals []string, updates map[string]string) (PropertiesUpdate, error) {
	if err := ns.Validate(); err != nil {
		return PropertiesUpdate{}, err
	}
	var both []string
	for _, k := range removals {
		if _, ok := updates[k]; ok {
			both = append(both, k)
		}
	}
	if len(both) > 0 {
		slices.Sort(both)
		return PropertiesUpdate{}, floe.E(floe.Unprocessable, "namespace", "properties are both updated and removed: %s", strings.Join(both, ", "))
	}
	if err := c.checkNamespaceLocation(ctx, wh, updates); err != nil {
		return PropertiesUpdate{}, err
	}
	var res PropertiesUpdate
	err := c.store.UpdateNamespaceProperties(ctx, wh, ns, func(p map[string]string) error {
		res = PropertiesUpdate{Updated: []string{}, Removed: []string{}, Missing: []string{}}
		for _, k := range removals {
			if _, ok := p[k]; ok {
				delete(p, k)
				res.Removed = append(res.Removed, k)
			} else {
				res.Missing = append(res.Missing, k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(updates)) {
			p[k] = updates[k]
			res.Updated = append(res.Updated, k)
		}
		return nil
	})
	return res, err
}

// DropNamespace drops an empty namespace.
func (c *Catalog) DropNamespace(ctx context.Context, wh string, ns Namespace) error {
	if err := ns.Validate(); err != nil {
		return err
	}
	return c.store.DropNamespace(ctx, wh, ns)
}

// List lists table or view names in ns after `after`.
func (c *Catalog) List(ctx context.Context, wh string, ns Namespace, kind Kind, after string, limit int) ([]string, error) {
	if err := ns.Validate(); err != nil {
		return nil, err
	}
	return c.store.ListEntities(ctx, wh, ns, kind, after, limit)
}

// Exists reports whether a table or view of the given kind exists.
func (c *Catalog) Exists(ctx context.Context, wh string, id Ident, kind Kind) (bool, error) {
	ent, err := c.entity(ctx, wh, id, kind)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return false, nil
		}
		return false, err
	}
	return ent.Kind == kind, nil
}

// entity loads the pointer of id and checks its kind, mapping absence to the
// kind's NotFound error with the reference implementation's message.
func (c *Catalog) entity(ctx context.Context, wh string, id Ident, kind Kind) (Entity, error) {
	if err := id.Validate(); err != nil {
		return Entity{}, err
	}
	ent, err := c.store.Entity(ctx, wh, id)
	if err == nil && ent.Kind == kind {
		return ent, nil
	}
	if err != nil && floe.KindOf(err) != floe.NotFound {
		return Entity{}, err
	}
	if err == nil {
		return Entity{}, &OtherKindError{Err: notExist(kind, id), Entity: ent}
	}
	return Entity{}, notExist(kind, id)
}

// OtherKindError is the NotFound error of a lookup of a table or view
// that found the other kind under the name: Entity is its pointer, so
// that the caller may load it without a second lookup (LoadViewAt). Its
// message is the NotFound error's.
type OtherKindError struct {
	Err    error
	Entity Entity
}

// Error returns the NotFound error's message.
func (e *OtherKindError) Error() string { return e.Err.Error() }

// Unwrap returns the NotFound error.
func (e *OtherKindError) Unwrap() error { return e.Err }

func notExist(kind Kind, id Ident) error {
	if kind == KindView {
		return &floe.Error{Kind: floe.NotFound, Entity: "view", Msg: "View does not exist: " + id.String()}
	}
	return &floe.Error{Kind: floe.NotFound, Entity: "table", Msg: "Table does not exist: " + id.String()}
}

// alreadyExists reports a name collision with the messages Iceberg's reference uses.
func alreadyExists(want, have Kind, id Ident) error {
	switch {
	case want == KindTable && have == KindView:
		return floe.E(floe.AlreadyExists, "view", "View with same name already exists: %s", id)
	case want == KindView && have == KindTable:
		return floe.E(floe.AlreadyExists, "table", "Table with same name already exists: %s", id)
	case want == KindView:
		return floe.E(floe.AlreadyExists, "view", "View already exists: %s", id)
	default:
		return floe.E(floe.AlreadyExists, "table", "Table already exists: %s", id)
	}
}

// renameTargetExists reports a rename onto a taken name with the messages
// of Iceberg's reference catalogs: "Table already exists: <to>" for a table
// onto a table, "Cannot rename <from> to <to>. View|Table already exists"
// otherwise.
func renameTargetExists(want, have Kind, from, to Ident) error {
	if want == KindTable && have == KindTable {
		return alreadyExists(want, have, to)
	}
	what, entity := "Table", "table"
	if have == KindView {
		what, entity = "View", "view"
	}
	return floe.E(floe.AlreadyExists, entity, "Cannot rename %s to %s. %s already exists", from, to, what)
}

// Rename moves a table or view.
func (c *Catalog) Rename(ctx context.Context, wh string, from, to Ident, kind Kind) error {
	if err := to.Validate(); err != nil {
		return err
	}
	if _, err := c.entity(ctx, wh, from, kind); err != nil {
		return err
	}
	if ent, err := c.store.Entity(ctx, wh, to); err == nil {
		return renameTargetExists(kind, ent.Kind, from, to)
	}
	err := c.store.RenameEntity(ctx, wh, from, to, kind)
	if floe.KindOf(err) == floe.AlreadyExists {
		if ent, err2 := c.store.Entity(ctx, wh, to); err2 == nil {
			return renameTargetExists(kind, ent.Kind, from, to)
		}
	}
	if floe.KindOf(err) == floe.NotFound && floe.EntityOf(err) != "namespace" {
		return notExist(kind, from)
	}
	return err
}
