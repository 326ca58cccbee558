package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/floe-lake/floe"
)

// TableCommit is one table's part of a commit: requirements checked against
// the current metadata, then updates applied to it.
type TableCommit struct {
	Ident        Ident
	Requirements table.Requirements
	Updates      table.Updates
	// CreatedAs, for a create renamed in its transaction before the
	// commit, is the name its location was assigned under.
	CreatedAs *Ident
}

// staged is a commit prepared against one version of the metadata.
type staged struct {
	commit  TableCommit
	base    *TableState // nil for a create
	next    *TableState // nil when the updates change nothing
	created bool
}

// CommitTable applies one table commit and returns the new state.
func (c *Catalog) CommitTable(ctx context.Context, wh string, tc TableCommit) (*TableState, error) {
	res, err := c.commit(ctx, wh, []TableCommit{tc})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// CommitTransaction applies commits to several tables atomically: all or none.
func (c *Catalog) CommitTransaction(ctx context.Context, wh string, commits []TableCommit) error {
	if len(commits) == 0 {
		return floe.E(floe.Invalid, "", "a transaction needs at least one table change")
	}
	seen := map[string]bool{}
	for _, tc := range commits {
		k := tc.Ident.Namespace.Key() + Sep + Sep + tc.Ident.Name
		if seen[k] {
			return floe.E(floe.Invalid, "", "table %s appears more than once in the transaction", tc.Ident)
		}
		seen[k] = true
	}
	_, err := c.commit(ctx, wh, commits)
	return err
}

func (c *Catalog) commit(ctx context.Context, wh string, commits []TableCommit) ([]*TableState, error) {
	return c.commitOps(ctx, wh, commits, nil)
}

// commitOps is commit with renames and drops (CommitTransactionOps).
func (c *Catalog) commitOps(ctx context.Context, wh string, commits []TableCommit, ops []EntityOp) (_ []*TableState, err error) {
	defer func() { c.observe.Commit(commitResult(err)) }()
	freed := freedBy(ops)
	w, err := c.store.Warehouse(ctx, wh)
	if err != nil {
		return nil, err
	}
	for _, tc := range commits {
		if err := tc.Ident.Validate(); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		stages := make([]*staged, 0, len(commits))
		var written []string
		cleanup := func() {
			for _, loc := range written {
				c.discard(context.WithoutCancel(ctx), loc)
			}
		}
		var swaps []Swap
		for _, tc := range commits {
			s, err := c.prepare(ctx, w, tc, freed)
			if err != nil {
				cleanup()
				return nil, err
			}
			stages = append(stages, s)
			if s.next == nil {
				continue
			}
			old, oldLoc := "", ""
			if s.base != nil {
				old, oldLoc = s.base.Location, s.base.Metadata.Location()
			}
			newLoc, err := normalizeLocation(s.next.Metadata.Location())
			if err != nil {
				cleanup()
				return nil, err
			}
			claim := s.base == nil || oldLoc != s.next.Metadata.Location()
			if claim {
				// Before the metadata file is written there: a new or moved
				// table must not be laid over files (see checkFreshLocation).
				as := tc.Ident
				if tc.CreatedAs != nil {
					as = *tc.CreatedAs
				}
				assigned, _ := normalizeLocation(defaultTableLocation(w, as, s.next.Metadata.TableUUID()))
				if err := c.checkFreshLocation(ctx, w, tc.Ident, newLoc, assigned); err != nil {
					cleanup()
					return nil, err
				}
			}
			if err := c.io.WriteFile(ctx, s.next.Location, s.next.JSON); err != nil {
				cleanup()
				return nil, err
			}
			written = append(written, s.next.Location)
			swaps = append(swaps, Swap{Warehouse: wh, Ident: tc.Ident, Kind: KindTable, Old: old, New: s.next.Location,
				Location: newLoc, ClaimLocation: claim, Claimant: ClaimantOf(ctx)})
		}
		if len(ops) > 0 {
			err = c.applySteps(ctx, wh, swaps, ops)
			if k := floe.KindOf(err); k == floe.AlreadyExists || k == floe.NotFound {
				cleanup()
				return nil, err
			}
		} else if len(swaps) > 0 {
			err = c.store.SwapPointers(ctx, swaps)
		}
		if err == nil {
			return c.finish(ctx, stages), nil
		}
		switch floe.KindOf(err) {
		case floe.Conflict, floe.AlreadyExists:
			cleanup()
			if attempt < c.retries && !hasCreate(stages) {
				c.observe.Commit(CommitRetry)
				c.backoff(ctx, attempt)
				continue
			}
			if hasCreate(stages) {
				return nil, floe.E(floe.Conflict, "commit", "Requirement failed: table already exists")
			}
			return nil, floe.E(floe.Conflict, "commit", "Commit failed: the table changed concurrently %d times; reload and retry", attempt+1)
		case floe.NotFound, floe.Invalid:
			cleanup()
			return nil, err
		default:
			return nil, c.resolveUnknown(ctx, wh, swaps, written, err)
		}
	}
}

// resolveUnknown decides the outcome of a swap that failed with an unexpected
// error: if no pointer moved, the new files are removed and the client may
// safely retry; otherwise the outcome is reported as unknown.
func (c *Catalog) resolveUnknown(ctx context.Context, wh string, swaps []Swap, written []string, cause error) error {
	ctx = context.WithoutCancel(ctx)
	moved := 0
	for _, s := range swaps {
		ent, err := c.store.Entity(ctx, wh, s.Ident)
		if err != nil && floe.KindOf(err) != floe.NotFound {
			return &floe.Error{Kind: floe.Indeterminate, Entity: "commit", Msg: "commit state unknown", Err: cause}
		}
		if err == nil && ent.MetadataLocation == s.New {
			moved++
		}
	}
	if moved == 0 {
		for _, loc := range written {
			c.discard(ctx, loc)
		}
		return &floe.Error{Kind: floe.Unavailable, Entity: "commit", Msg: "commit was not applied; retry", Err: cause}
	}
	if moved == len(swaps) {
		c.log.WarnContext(ctx, "commit applied despite store error", "err", cause)
		return nil
	}
	return &floe.Error{Kind: floe.Indeterminate, Entity: "commit", Msg: "commit state unknown", Err: cause}
}

func hasCreate(stages []*staged) bool {
	for _, s := range stages {
		if s.created {
			return true
		}
	}
	return false
}

func (c *Catalog) backoff(ctx context.Context, attempt int) {
	d := time.Duration(1<<attempt) * 2 * time.Millisecond
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// finish caches the new states, deletes metadata files that fell out of the
// metadata log where the table asks for it, and returns each table's state.
func (c *Catalog) finish(ctx context.Context, stages []*staged) []*TableState {
	out := make([]*TableState, len(stages))
	for i, s := range stages {
		if s.next == nil {
			out[i] = s.base
			continue
		}
		c.remember(s.next)
		out[i] = s.next
		if s.base != nil && s.next.Metadata.Properties().GetBool(table.MetadataDeleteAfterCommitEnabledKey, false) {
			keep := map[string]bool{}
			for e := range s.next.Metadata.PreviousFiles() {
				keep[e.MetadataFile] = true
			}
			for e := range s.base.Metadata.PreviousFiles() {
				if !keep[e.MetadataFile] {
					c.discard(context.WithoutCancel(ctx), e.MetadataFile)
				}
			}
		}
	}
	return out
}

// prepare validates requirements and applies updates against the current
// metadata of one table, producing the next metadata (not yet written).
func (c *Catalog) prepare(ctx context.Context, w Warehouse, tc TableCommit, freed map[string]bool) (*staged, error) {
	create := 0
	for _, r := range tc.Requirements {
		if r.GetType() == "assert-create" {
			create++
		}
	}
	if create > 0 && create != len(tc.Requirements) {
		return nil, floe.E(floe.Invalid, "commit", "assert-create cannot be combined with other requirements")
	}
	ent, err := c.store.Entity(ctx, w.Name, tc.Ident)
	if err != nil && floe.KindOf(err) != floe.NotFound {
		return nil, err
	}
	exists := err == nil
	if exists && create > 0 && freed[tc.Ident.Namespace.Key()+Sep+Sep+tc.Ident.Name] {
		// Renamed away or dropped by the transaction before the create.
		exists = false
	}
	if exists && ent.Kind != KindTable {
		if create > 0 {
			return nil, alreadyExists(KindTable, ent.Kind, tc.Ident)
		}
		return nil, notExist(KindTable, tc.Ident)
	}
	s := &staged{commit: tc}
	var bld *table.MetadataBuilder
	if create > 0 {
		if exists {
			return nil, floe.E(floe.Conflict, "commit", "Requirement failed: table already exists")
		}
		if _, err := c.store.NamespaceProperties(ctx, w.Name, tc.Ident.Namespace); err != nil {
			return nil, err
		}
		s.created = true
		if bld, err = builderForCreate(tc.Updates); err != nil {
			return nil, err
		}
	} else {
		if !exists {
			return nil, notExist(KindTable, tc.Ident)
		}
		if s.base, err = c.loadTableState(ctx, ent.MetadataLocation); err != nil {
			return nil, err
		}
		for _, r := range tc.Requirements {
			if err := checkRequirement(r, s.base.Metadata); err != nil {
				return nil, err
			}
		}
		if bld, err = table.MetadataBuilderFromBase(s.base.Metadata, s.base.Location); err != nil {
			return nil, fmt.Errorf("builder: %w", err)
		}
	}
	if err := applyUpdates(bld, tc.Updates, s.created); err != nil {
		return nil, err
	}
	if !s.created && !bld.HasChanges() {
		return s, nil
	}
	if s.base != nil && c.beforeSchemaChange != nil && changesSchema(tc.Updates) {
		if err := c.beforeSchemaChange(ctx, w.Name, tc.Ident, s.base.Metadata); err != nil {
			return nil, err
		}
	}
	md, err := build(bld)
	if err != nil {
		return nil, err
	}
	if s.created && md.Location() == "" {
		return nil, floe.E(floe.Invalid, "commit", "a staged create must set a location")
	}
	if _, err := c.checkTableLocation(w, md.Location()); err != nil {
		return nil, err
	}
	var baseMD table.Metadata
	if s.base != nil {
		baseMD = s.base.Metadata
	}
	if err := c.checkFiles(ctx, baseMD, md); err != nil {
		return nil, err
	}
	raw, err := encodeMetadata(md)
	if err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "cannot encode table metadata: %s", err)
	}
	prev := ""
	if s.base != nil {
		prev = s.base.Location
	}
	s.next = &TableState{Location: nextMetadataLocation(md.Location(), prev), Metadata: md, JSON: raw}
	return s, nil
}

// changesSchema reports whether updates add, select or remove a schema.
func changesSchema(updates table.Updates) bool {
	for _, u := range updates {
		switch u.Action() {
		case table.UpdateAddSchema, table.UpdateSetCurrentSchema, table.UpdateRemoveSchemas:
			return true
		}
	}
	return false
}

// builderForCreate starts an empty builder at the format version the updates
// ask for (default 2) with a fresh UUID unless one is assigned.
func builderForCreate(updates table.Updates) (*table.MetadataBuilder, error) {
	version := 2
	assigns := false
	for _, u := range updates {
		switch u.Action() {
		case "upgrade-format-version":
			var v struct {
				FormatVersion int `json:"format-version"`
			}
			if b, err := json.Marshal(u); err == nil && json.Unmarshal(b, &v) == nil && v.FormatVersion > 0 {
				version = v.FormatVersion
			}
		case "assign-uuid":
			assigns = true
		}
	}
	bld, err := table.NewMetadataBuilder(version)
	if err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "%s", err)
	}
	if !assigns {
		if err := bld.SetUUID(uuid.New()); err != nil {
			return nil, floe.Wrap(floe.Invalid, err, "%s", err)
		}
	}
	return bld, nil
}

func build(bld *table.MetadataBuilder) (md table.Metadata, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = floe.E(floe.Invalid, "commit", "invalid metadata: %v", r)
		}
	}()
	md, err = bld.Build()
	if err != nil {
		return nil, updateError("build", err)
	}
	return md, nil
}

func updateError(action string, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "must be > than last sequence number") || errors.Is(err, table.ErrInvalidRowLineage) && strings.Contains(msg, "behind table next-row-id") {
		return &floe.Error{Kind: floe.Conflict, Entity: "commit", Msg: "Validation failed, please retry: " + msg, Err: err}
	}
	return &floe.Error{Kind: floe.Invalid, Entity: "commit", Msg: fmt.Sprintf("invalid update %s: %s", action, msg), Err: err}
}

// checkRequirement validates one table requirement against the current
// metadata, answering a failure with the reference implementation's message.
// iceberg-go decides whether the requirement holds; only the wording of a
// failure is Floe's (the RCK and Java clients match on it).
func checkRequirement(r table.Requirement, md table.Metadata) error {
	err := r.Validate(md)
	if err == nil {
		return nil
	}
	msg := requirementMessage(err)
	if ref, ok := referenceRequirementMessage(r, md); ok {
		msg = ref
	}
	return &floe.Error{Kind: floe.Conflict, Entity: "commit", Msg: msg}
}

// referenceRequirementMessage words the failure of r against md as
// Apache Iceberg's UpdateRequirement does; ok is false for a requirement
// (or a failure) it has no wording for. iceberg-go's requirement types are
// unexported, so r is read through its JSON form.
func referenceRequirementMessage(r table.Requirement, md table.Metadata) (string, bool) {
	if md == nil {
		return "", false
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", false
	}
	var q struct {
		Type                    string `json:"type"`
		UUID                    string `json:"uuid"`
		Ref                     string `json:"ref"`
		SnapshotID              *int64 `json:"snapshot-id"`
		LastAssignedFieldID     int    `json:"last-assigned-field-id"`
		CurrentSchemaID         int    `json:"current-schema-id"`
		LastAssignedPartitionID int    `json:"last-assigned-partition-id"`
		DefaultSpecID           int    `json:"default-spec-id"`
		DefaultSortOrderID      int    `json:"default-sort-order-id"`
	}
	if err := json.Unmarshal(b, &q); err != nil {
		return "", false
	}
	const p = "Requirement failed: "
	switch q.Type {
	case "assert-table-uuid":
		return fmt.Sprintf(p+"UUID does not match: expected %s != %s", md.TableUUID(), q.UUID), true
	case "assert-ref-snapshot-id":
		var ref table.SnapshotRef
		found := false
		for name, r := range md.Refs() {
			if name == q.Ref {
				ref, found = r, true
			}
		}
		switch {
		case !found && q.SnapshotID != nil:
			return fmt.Sprintf(p+"branch or tag %s is missing, expected %d", q.Ref, *q.SnapshotID), true
		case !found:
			return "", false
		case ref.SnapshotRefType != table.BranchRef && ref.SnapshotRefType != table.TagRef:
			return "", false
		case q.SnapshotID == nil:
			return fmt.Sprintf(p+"%s %s was created concurrently", ref.SnapshotRefType, q.Ref), true
		case *q.SnapshotID != ref.SnapshotID:
			return fmt.Sprintf(p+"%s %s has changed: expected id %d != %d", ref.SnapshotRefType, q.Ref, *q.SnapshotID, ref.SnapshotID), true
		}
		return "", false // e.g. a tag as a transaction's target: iceberg-go's words
	case "assert-last-assigned-field-id":
		return fmt.Sprintf(p+"last assigned field id changed: expected id %d != %d", q.LastAssignedFieldID, md.LastColumnID()), true
	case "assert-current-schema-id":
		return fmt.Sprintf(p+"current schema changed: expected id %d != %d", q.CurrentSchemaID, md.CurrentSchema().ID), true
	case "assert-last-assigned-partition-id":
		last := -1
		if l := md.LastPartitionSpecID(); l != nil {
			last = *l
		}
		return fmt.Sprintf(p+"last assigned partition id changed: expected id %d != %d", q.LastAssignedPartitionID, last), true
	case "assert-default-spec-id":
		return fmt.Sprintf(p+"default partition spec changed: expected id %d != %d", q.DefaultSpecID, md.DefaultPartitionSpec()), true
	case "assert-default-sort-order-id":
		return fmt.Sprintf(p+"default sort order changed: expected id %d != %d", q.DefaultSortOrderID, md.DefaultSortOrder()), true
	}
	return "", false
}

// requirementMessage renders a failed requirement the way Iceberg's reference does.
func requirementMessage(err error) string {
	m := err.Error()
	if strings.HasPrefix(m, "requirement failed") {
		m = "R" + m[1:]
	}
	if !strings.HasPrefix(m, "Requirement failed") {
		m = "Requirement failed: " + m
	}
	return m
}
