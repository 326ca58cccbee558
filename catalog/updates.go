package catalog

import (
	"encoding/json"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
)

// This file applies a commit's TableUpdates with the semantics of Apache
// Iceberg's reference TableMetadata.Builder (the Java implementation the REST
// spec's reference server uses), where iceberg-go's MetadataBuilder, which
// does the work, differs from it in what it accepts. iceberg-go stays the
// builder; this layer only decides when what is applied:
//
//   - An empty builder (a create) has current schema id 0 in the reference,
//     so the first schema a create adds is current from the moment it is
//     added: add-spec and add-sort-order bind against it even when the client
//     sends set-current-schema after them (DuckDB's CREATE TABLE does), and a
//     create that never sends set-current-schema gets it as current schema.
//     iceberg-go's empty builder has no current schema until one is set.
//   - The reference binds an add-spec or add-sort-order that comes before any
//     schema against no schema at all, which works for an unpartitioned spec
//     and an unsorted order only. Those (with any set-default-spec and
//     set-default-sort-order among them) are applied right after the first
//     add-schema instead, in their order, which gives the same ids and the
//     same "last added" for -1.
//
// Everything the reference refuses stays refused: a partition or sort field
// before any schema, a field on a column that the schema current at that
// point lacks (on an existing table a spec or order on a new column must come
// after set-current-schema), and -1 ("last added") when nothing was added.

// applyUpdates applies each update, turning panics and errors into Invalid
// (or Conflict for the validations a retry on fresh metadata can fix). fresh
// says bld is an empty builder, that is the commit creates the table.
func applyUpdates(bld *table.MetadataBuilder, updates table.Updates, fresh bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = floe.E(floe.Invalid, "commit", "invalid update: %v", r)
		}
	}()
	if !fresh {
		for _, u := range updates {
			if err := u.Apply(bld); err != nil {
				return updateError(u.Action(), err)
			}
		}
		return nil
	}
	first, haveFirst := 0, false // the id of the create's first schema
	adopt := func() error {
		if !haveFirst || bld.CurrentSchema() != nil {
			return nil
		}
		if err := bld.SetCurrentSchemaID(first); err != nil {
			return updateError(table.UpdateSetCurrentSchema, err)
		}
		return nil
	}
	for _, u := range schemaFirst(updates) {
		switch u.Action() {
		case table.UpdateAddSpec, table.UpdateAddSortOrder:
			if err := adopt(); err != nil {
				return err
			}
		}
		if err := u.Apply(bld); err != nil {
			return updateError(u.Action(), err)
		}
		if !haveFirst && u.Action() == table.UpdateAddSchema {
			first, haveFirst = addedSchemaID(u)
		}
	}
	return adopt()
}

// schemaFirst returns a create's updates with the unpartitioned add-spec and
// unsorted add-sort-order updates that precede the first add-schema, and the
// set-default-spec and set-default-sort-order updates among them, moved to
// right after that add-schema in their order. Updates with partition or sort
// fields stay where they are (and fail there, as in the reference).
func schemaFirst(updates table.Updates) table.Updates {
	at := -1
	for i, u := range updates {
		if u.Action() == table.UpdateAddSchema {
			at = i
			break
		}
	}
	if at <= 0 {
		return updates
	}
	var moved, kept table.Updates
	for _, u := range updates[:at] {
		switch u.Action() {
		case table.UpdateAddSpec, table.UpdateAddSortOrder:
			if hasFields(u) {
				kept = append(kept, u)
				continue
			}
			moved = append(moved, u)
		case table.UpdateSetDefaultSpec, table.UpdateSetDefaultSortOrder:
			moved = append(moved, u)
		default:
			kept = append(kept, u)
		}
	}
	if len(moved) == 0 {
		return updates
	}
	out := make(table.Updates, 0, len(updates))
	out = append(out, kept...)
	out = append(out, updates[at])
	out = append(out, moved...)
	return append(out, updates[at+1:]...)
}

// hasFields reports whether an add-spec or add-sort-order update has any
// partition or sort field (an update that cannot be read counts as having
// some, so that it is not moved).
func hasFields(u table.Update) bool {
	raw, err := json.Marshal(u)
	if err != nil {
		return true
	}
	var v struct {
		Spec *struct {
			Fields []json.RawMessage `json:"fields"`
		} `json:"spec"`
		Order *struct {
			Fields []json.RawMessage `json:"fields"`
		} `json:"sort-order"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return true
	}
	switch {
	case v.Spec != nil:
		return len(v.Spec.Fields) > 0
	case v.Order != nil:
		return len(v.Order.Fields) > 0
	}
	return true
}

// addedSchemaID is the id an applied add-schema update's schema got (the
// builder writes it into the update's schema).
func addedSchemaID(u table.Update) (int, bool) {
	raw, err := json.Marshal(u)
	if err != nil {
		return 0, false
	}
	var v struct {
		Schema *struct {
			ID *int `json:"schema-id"`
		} `json:"schema"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Schema == nil || v.Schema.ID == nil {
		return 0, false
	}
	return *v.Schema.ID, true
}
