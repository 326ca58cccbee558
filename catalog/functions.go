package catalog

import (
	"context"
	"net/url"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/udf"
)

// FunctionStore persists the pointers of functions (user-defined functions
// in the Iceberg UDF format) to their current metadata files. Functions
// have their own identifier space, apart from tables and views. Stores
// that do not implement it make the function operations Unsupported.
type FunctionStore interface {
	// Function returns the pointer of function id: NotFound (entity
	// "function") if there is none.
	Function(ctx context.Context, wh string, id Ident) (Entity, error)
	// ListFunctions lists the function names of ns after `after` in name
	// order, at most limit (<= 0: all): NotFound if the namespace is missing.
	ListFunctions(ctx context.Context, wh string, ns Namespace, after string, limit int) ([]string, error)
	// SwapFunction points id at loc. Old == "" creates it: AlreadyExists
	// (entity "function") if it exists, NotFound if the namespace is
	// missing. Otherwise the pointer must equal old: Conflict (entity
	// "commit") if it does not or the function is gone.
	SwapFunction(ctx context.Context, wh string, id Ident, old, loc string) error
	// DeleteFunction removes function id if it points at old (any
	// location when old is ""), returning what it pointed at: NotFound
	// (entity "function"), Conflict if the pointer moved.
	DeleteFunction(ctx context.Context, wh string, id Ident, old string) (Entity, error)
}

// ErrNoSuchFunction is returned when a function does not exist.
var ErrNoSuchFunction = &floe.Error{Kind: floe.NotFound, Entity: "function"}

// FunctionState is a function's current metadata.
type FunctionState struct {
	// Location is the metadata file's location.
	Location string
	// Metadata is the parsed, validated metadata.
	Metadata *udf.Metadata
	// JSON is the metadata file's content, as served.
	JSON []byte
}

// PutFunction is a create or replace of a function with the metadata in JSON.
type PutFunction struct {
	// Metadata is FunctionMetadata JSON (the Iceberg UDF format).
	Metadata []byte
	// Create refuses an existing function (AlreadyExists).
	Create bool
	// Replace refuses a missing function (NotFound).
	Replace bool
	// IfMatch, when set, is the metadata location the caller read: the
	// replace fails with Conflict if the function moved on since.
	IfMatch string
}

func (c *Catalog) functions() (FunctionStore, error) {
	fs, ok := c.store.(FunctionStore)
	if !ok {
		return nil, floe.E(floe.Unsupported, "", "this catalog store does not hold functions")
	}
	return fs, nil
}

// ListFunctions lists the function names of ns after `after`, at most limit.
func (c *Catalog) ListFunctions(ctx context.Context, wh string, ns Namespace, after string, limit int) ([]string, error) {
	if err := ns.Validate(); err != nil {
		return nil, err
	}
	fs, err := c.functions()
	if err != nil {
		return nil, err
	}
	return fs.ListFunctions(ctx, wh, ns, after, limit)
}

// LoadFunction returns the current metadata of function id.
func (c *Catalog) LoadFunction(ctx context.Context, wh string, id Ident) (*FunctionState, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	fs, err := c.functions()
	if err != nil {
		return nil, err
	}
	ent, err := fs.Function(ctx, wh, id)
	if err != nil {
		return nil, err
	}
	return c.readFunction(ctx, ent.MetadataLocation)
}

func (c *Catalog) readFunction(ctx context.Context, loc string) (*FunctionState, error) {
	raw, err := c.io.ReadFile(ctx, loc)
	if err != nil {
		return nil, err
	}
	md, err := udf.Parse(raw)
	if err != nil {
		// A file that fails validation was not written by Floe.
		return nil, floe.Wrap(floe.Internal, err, "function metadata at %s is not valid", loc)
	}
	return &FunctionState{Location: loc, Metadata: md, JSON: raw}, nil
}

// namespaceLocation is where the namespace's objects go: its "location"
// property, else <warehouse>/<levels>.
func (c *Catalog) namespaceLocation(ctx context.Context, w Warehouse, ns Namespace) (string, error) {
	props, err := c.store.NamespaceProperties(ctx, w.Name, ns)
	if err != nil {
		return "", err
	}
	if loc := props[LocationProperty]; loc != "" {
		return c.checkLocation(w, loc)
	}
	return c.checkLocation(w, defaultNamespaceLocation(w, ns))
}

// functionBase is a function's base location:
// <namespace location>/functions/<name>-<uuid hex>, unique per function so
// that a dropped and re-created function never shares files with the old one.
func functionBase(nsLoc string, id Ident, fnUUID string) string {
	return strings.TrimSuffix(nsLoc, "/") + "/functions/" + url.PathEscape(id.Name) + "-" + strings.ReplaceAll(strings.ToLower(fnUUID), "-", "")
}

// PutFunction creates or replaces function id. The metadata is validated
// (udf.Validate) before anything is written; Floe sets its location
// (a location in the request must equal the function's). A new metadata
// file is written atomically under the namespace's location and the
// pointer swapped; a concurrent change gives Conflict when IfMatch is set,
// and is retried otherwise (the request replaces whatever is current).
// It reports whether the function was created.
func (c *Catalog) PutFunction(ctx context.Context, wh string, id Ident, req PutFunction) (*FunctionState, bool, error) {
	if err := id.Validate(); err != nil {
		return nil, false, err
	}
	fs, err := c.functions()
	if err != nil {
		return nil, false, err
	}
	md, err := udf.Parse(req.Metadata)
	if err != nil {
		return nil, false, err
	}
	w, err := c.store.Warehouse(ctx, wh)
	if err != nil {
		return nil, false, err
	}
	nsLoc, err := c.namespaceLocation(ctx, w, id.Namespace)
	if err != nil {
		return nil, false, err
	}
	for attempt := 0; ; attempt++ {
		var base *FunctionState
		ent, err := fs.Function(ctx, wh, id)
		switch {
		case err == nil:
			if req.Create {
				return nil, false, floe.E(floe.AlreadyExists, "function", "Function already exists: %s", id)
			}
			if base, err = c.readFunction(ctx, ent.MetadataLocation); err != nil {
				return nil, false, err
			}
			if req.IfMatch != "" && req.IfMatch != ent.MetadataLocation {
				return nil, false, floe.E(floe.Conflict, "commit", "Commit failed: function %s is at %s, not %s", id, ent.MetadataLocation, req.IfMatch)
			}
		case floe.KindOf(err) != floe.NotFound:
			return nil, false, err
		case req.Replace || req.IfMatch != "":
			return nil, false, floe.E(floe.NotFound, "function", "Function does not exist: %s", id)
		}
		loc := functionBase(nsLoc, id, md.FunctionUUID)
		prev := ""
		if base != nil {
			prev = base.Location
			if !strings.EqualFold(base.Metadata.FunctionUUID, md.FunctionUUID) {
				return nil, false, floe.E(floe.Invalid, "metadata", "invalid function metadata: function-uuid %s differs from the function's %s (it is generated once, at creation)", md.FunctionUUID, base.Metadata.FunctionUUID)
			}
			loc = base.Metadata.Location
		}
		if md.Location != "" && md.Location != loc {
			return nil, false, floe.E(floe.Invalid, "metadata", "invalid function metadata: location %q is not the function's location %q (Floe places the files; omit it)", md.Location, loc)
		}
		raw, err := udf.Normalize(req.Metadata, loc)
		if err != nil {
			return nil, false, err
		}
		norm := *md
		norm.Location = loc
		st := &FunctionState{Location: nextMetadataLocation(loc, prev), Metadata: &norm, JSON: raw}
		if err := c.io.WriteFile(ctx, st.Location, raw); err != nil {
			return nil, false, err
		}
		err = fs.SwapFunction(ctx, wh, id, prev, st.Location)
		if err == nil {
			return st, base == nil, nil
		}
		c.discard(ctx, st.Location)
		k := floe.KindOf(err)
		if (k == floe.Conflict || (k == floe.AlreadyExists && !req.Create)) && req.IfMatch == "" && attempt < c.retries {
			c.backoff(ctx, attempt)
			continue
		}
		if k == floe.AlreadyExists {
			return nil, false, floe.E(floe.AlreadyExists, "function", "Function already exists: %s", id)
		}
		return nil, false, err
	}
}

// DropFunction removes function id (its metadata files stay, as a view's do).
func (c *Catalog) DropFunction(ctx context.Context, wh string, id Ident) error {
	if err := id.Validate(); err != nil {
		return err
	}
	fs, err := c.functions()
	if err != nil {
		return err
	}
	_, err = fs.DeleteFunction(ctx, wh, id, "")
	return err
}
