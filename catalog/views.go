package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"

	"github.com/floe-lake/floe"
)

// CreateViewRequest describes a new view.
type CreateViewRequest struct {
	Name       string
	Location   string
	Schema     *iceberg.Schema
	Version    *view.Version
	Properties map[string]string
}

// ViewCommit is a replaceView request: requirements then updates.
type ViewCommit struct {
	Requirements view.Requirements
	Updates      view.Updates
}

// CreateView creates a view in ns.
func (c *Catalog) CreateView(ctx context.Context, wh string, ns Namespace, req CreateViewRequest) (*ViewState, error) {
	id := Ident{Namespace: ns, Name: req.Name}
	st, err := c.StageView(ctx, wh, ns, req)
	if err != nil {
		return nil, err
	}
	if err := c.store.SwapPointers(ctx, []Swap{{Warehouse: wh, Ident: id, Kind: KindView, New: st.Location}}); err != nil {
		c.discard(ctx, st.Location)
		if k := floe.KindOf(err); k == floe.AlreadyExists || k == floe.Conflict {
			if ent, err := c.store.Entity(ctx, wh, id); err == nil {
				return nil, alreadyExists(KindView, ent.Kind, id)
			}
		}
		return nil, err
	}
	return st, nil
}

// StageView writes the first metadata of a new view without creating it:
// a transaction creates it (EntityOp.CreateAt), or nothing does.
func (c *Catalog) StageView(ctx context.Context, wh string, ns Namespace, req CreateViewRequest) (*ViewState, error) {
	id := Ident{Namespace: ns, Name: req.Name}
	if req.Schema == nil || req.Version == nil {
		return nil, floe.E(floe.Invalid, "view", "schema and view-version are required")
	}
	vid, loc, err := c.placeNew(ctx, wh, id, KindView, req.Location)
	if err != nil {
		return nil, err
	}
	props := iceberg.Properties{}
	maps.Copy(props, req.Properties)
	md, err := newViewMetadata(req.Version, req.Schema, loc, props, vid)
	if err != nil {
		return nil, err
	}
	return c.writeView(ctx, loc, "", md)
}

func newViewMetadata(v *view.Version, sc *iceberg.Schema, loc string, props iceberg.Properties, id uuid.UUID) (md view.Metadata, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = floe.E(floe.Invalid, EntityMetadata, "invalid view definition: %v", r)
		}
	}()
	md, err = view.NewMetadataWithUUID(v, sc, loc, props, id)
	if err != nil {
		return nil, invalidMetadata(err, "invalid view definition: %s", err)
	}
	return md, nil
}

func (c *Catalog) writeView(ctx context.Context, loc, prev string, md view.Metadata) (*ViewState, error) {
	raw, err := json.Marshal(md)
	if err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "cannot encode view metadata")
	}
	st := &ViewState{Location: nextMetadataLocation(loc, prev), Metadata: md, JSON: raw}
	if err := c.io.WriteFile(ctx, st.Location, raw); err != nil {
		return nil, err
	}
	c.cache.add(st.Location, cached{view: st})
	return st, nil
}

// LoadView returns the current metadata of a view.
func (c *Catalog) LoadView(ctx context.Context, wh string, id Ident) (*ViewState, error) {
	ent, err := c.entity(ctx, wh, id, KindView)
	if err != nil {
		return nil, err
	}
	return c.loadViewState(ctx, ent.MetadataLocation)
}

// LoadViewAt loads the view metadata at loc, the MetadataLocation of a
// view's entity (see OtherKindError).
func (c *Catalog) LoadViewAt(ctx context.Context, loc string) (*ViewState, error) {
	return c.loadViewState(ctx, loc)
}

// ReplaceView commits requirements and updates to a view.
func (c *Catalog) ReplaceView(ctx context.Context, wh string, id Ident, vc ViewCommit) (*ViewState, error) {
	w, err := c.store.Warehouse(ctx, wh)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		ent, err := c.entity(ctx, wh, id, KindView)
		if err != nil {
			return nil, err
		}
		base, err := c.loadViewState(ctx, ent.MetadataLocation)
		if err != nil {
			return nil, err
		}
		for _, r := range vc.Requirements {
			if err := r.Validate(base.Metadata); err != nil {
				return nil, &floe.Error{Kind: floe.Conflict, Entity: "commit", Msg: viewRequirementMessage(err, base.Metadata)}
			}
		}
		md, err := applyViewUpdates(base.Metadata, vc.Updates)
		if err != nil {
			return nil, err
		}
		if md == nil {
			return base, nil
		}
		if _, err := c.checkLocation(w, md.Location()); err != nil {
			return nil, err
		}
		st, err := c.writeView(ctx, md.Location(), base.Location, md)
		if err != nil {
			return nil, err
		}
		err = c.store.SwapPointers(ctx, []Swap{{Warehouse: wh, Ident: id, Kind: KindView, Old: base.Location, New: st.Location}})
		if err == nil {
			return st, nil
		}
		c.discard(ctx, st.Location)
		if floe.KindOf(err) == floe.Conflict && attempt < c.retries {
			c.backoff(ctx, attempt)
			continue
		}
		return nil, err
	}
}

func applyViewUpdates(base view.Metadata, updates view.Updates) (md view.Metadata, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = floe.E(floe.Invalid, "view", "invalid view update: %v", r)
		}
	}()
	bld, err := view.MetadataBuilderFromBase(base)
	if err != nil {
		return nil, err
	}
	for _, u := range updates {
		if err := u.Apply(bld); err != nil {
			return nil, invalidMetadata(err, "invalid update %s: %s", u.Action(), err)
		}
	}
	if !bld.HasChanges() {
		return nil, nil
	}
	res, err := bld.Build()
	if err != nil {
		return nil, invalidMetadata(err, "invalid view metadata: %s", err)
	}
	return res.Metadata, nil
}

// DropView removes a view (its files stay).
func (c *Catalog) DropView(ctx context.Context, wh string, id Ident) error {
	if _, err := c.entity(ctx, wh, id, KindView); err != nil {
		return err
	}
	if _, err := c.store.DeleteEntity(ctx, wh, id, KindView, nil); err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return notExist(KindView, id)
		}
		return err
	}
	return nil
}

// RegisterView adds a view whose metadata file already exists.
func (c *Catalog) RegisterView(ctx context.Context, wh string, id Ident, metadataLocation string) (*ViewState, error) {
	_, loc, err := c.checkRegister(ctx, wh, id, metadataLocation)
	if err != nil {
		return nil, err
	}
	if ent, err := c.store.Entity(ctx, wh, id); err == nil {
		return nil, alreadyExists(KindView, ent.Kind, id)
	}
	st, err := c.loadViewState(ctx, loc)
	if err != nil {
		return nil, err
	}
	if err := c.store.SwapPointers(ctx, []Swap{{Warehouse: wh, Ident: id, Kind: KindView, New: loc}}); err != nil {
		if k := floe.KindOf(err); k == floe.AlreadyExists || k == floe.Conflict {
			return nil, alreadyExists(KindView, KindView, id)
		}
		return nil, err
	}
	return st, nil
}

// EntityMetadata is the Entity of an Invalid error for metadata that
// Iceberg's metadata builder refuses (a view version with two queries for
// one dialect, say). Apache Iceberg's reference raises
// IllegalArgumentException there, and the REST edge answers it with that
// error type (400), so that Java clients raise the same exception class.
const EntityMetadata = "metadata"

// invalidMetadata is an Invalid error of entity EntityMetadata around err.
func invalidMetadata(err error, format string, args ...any) error {
	return &floe.Error{Kind: floe.Invalid, Entity: EntityMetadata, Msg: fmt.Sprintf(format, args...), Err: err}
}

// viewRequirementMessage words a failed view requirement as Apache
// Iceberg's reference does. assert-view-uuid is the only view requirement.
func viewRequirementMessage(err error, md view.Metadata) string {
	if md != nil && strings.Contains(err.Error(), "UUID mismatch") {
		_, want, _ := strings.Cut(err.Error(), " != ")
		return fmt.Sprintf("Requirement failed: view UUID does not match: expected %s != %s", md.ViewUUID(), strings.TrimSpace(want))
	}
	return requirementMessage(err)
}
