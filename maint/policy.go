package maint

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
)

// Properties that set a table's maintenance policy. Each may be set on the
// table or on any of its namespaces: a table property overrides a
// namespace's, an inner namespace's overrides an outer one's, and unset or
// malformed values fall back to the default. docs/maintenance.md lists them.
const (
	// PropCompactionEnabled (bool, default true) turns bin-pack compaction on or off.
	PropCompactionEnabled = "floe.maintenance.compaction.enabled"
	// PropTargetFileSize (bytes, default 512 MiB) is the size compaction packs files to.
	PropTargetFileSize = "floe.maintenance.target-file-size-bytes"
	// PropMinInputFiles (default 5) is how many small files of one partition
	// it takes before compaction rewrites them.
	PropMinInputFiles = "floe.maintenance.min-input-files"
	// PropCompactionInterval (duration, default 10m) is how often the
	// scheduler looks at a table for compaction.
	PropCompactionInterval = "floe.maintenance.compaction.interval"

	// PropOrphanEnabled (bool, default true) turns orphan-file removal on or off.
	PropOrphanEnabled = "floe.maintenance.orphan.enabled"
	// PropOrphanMinAge (duration, default 3 days, never less than 1h) is
	// how old an unreferenced file must be before it is removed.
	PropOrphanMinAge = "floe.maintenance.orphan.min-age"
	// PropOrphanInterval (duration, default 24h) is how often orphans are looked for.
	PropOrphanInterval = "floe.maintenance.orphan.interval"

	// PropManifestsEnabled (bool, default true) turns manifest rewriting on or off.
	PropManifestsEnabled = "floe.maintenance.manifests.enabled"
	// PropMinManifests (default 16) is how many data manifests the current
	// snapshot must have before they are rewritten into fewer.
	PropMinManifests = "floe.maintenance.manifests.min-count"
	// PropManifestsInterval (duration, default 1h) is how often manifests are looked at.
	PropManifestsInterval = "floe.maintenance.manifests.interval"

	// PropExpireEnabled (bool, default true) turns snapshot expiry on or
	// off (gc.enabled=false turns it off too). Retention itself is set by
	// Iceberg's history.expire.max-snapshot-age-ms and
	// history.expire.min-snapshots-to-keep.
	PropExpireEnabled = "floe.maintenance.snapshot.enabled"

	// PropColdAfter (duration, e.g. "30d"; unset, "0" or "off": lifecycle
	// off, the default) turns lifecycle tiering on: data files that no
	// branch or tag head and no snapshot younger than this reference move
	// to the embedded store's cold tier (see Lifecycle).
	PropColdAfter = "floe.lifecycle.cold-after"
	// PropLifecycleInterval (duration, default 24h) is how often the
	// lifecycle job looks at a table.
	PropLifecycleInterval = "floe.lifecycle.interval"
)

// Policy defaults.
const (
	DefaultTargetFileSize     = 512 << 20
	DefaultMinInputFiles      = 5
	DefaultCompactionInterval = 10 * time.Minute
	DefaultOrphanMinAge       = 72 * time.Hour
	// MinOrphanAge is the floor of the orphan safety window: a file younger
	// than this is never removed, whatever the policy says, so that the
	// files of commits in flight are safe.
	MinOrphanAge            = time.Hour
	DefaultOrphanInterval   = 24 * time.Hour
	DefaultMinManifests     = 16
	DefaultManifestInterval = time.Hour
	// DefaultLifecycleInterval is how often lifecycle looks at a table
	// whose policy turns it on.
	DefaultLifecycleInterval = 24 * time.Hour
)

// Policy is the maintenance policy of one table, resolved from defaults,
// namespace properties and table properties.
type Policy struct {
	CompactionEnabled  bool
	TargetFileSize     int64
	MinInputFiles      int
	CompactionInterval time.Duration

	ExpireEnabled bool
	Retention     Retention

	OrphanEnabled  bool
	OrphanMinAge   time.Duration
	OrphanInterval time.Duration

	ManifestsEnabled  bool
	MinManifests      int
	ManifestsInterval time.Duration

	// ColdAfter is the lifecycle age (0: lifecycle off).
	ColdAfter         time.Duration
	LifecycleInterval time.Duration
}

// DefaultPolicy returns the policy of a table that sets nothing, with
// retention ret (see ExpireOptions).
func DefaultPolicy(ret Retention) Policy {
	if ret.MaxAge <= 0 {
		ret.MaxAge = DefaultMaxSnapshotAge
	}
	if ret.MinKeep <= 0 {
		ret.MinKeep = DefaultMinSnapshotsToKeep
	}
	return Policy{
		CompactionEnabled: true, TargetFileSize: DefaultTargetFileSize, MinInputFiles: DefaultMinInputFiles,
		CompactionInterval: DefaultCompactionInterval,
		ExpireEnabled:      true, Retention: ret,
		OrphanEnabled: true, OrphanMinAge: DefaultOrphanMinAge, OrphanInterval: DefaultOrphanInterval,
		ManifestsEnabled: true, MinManifests: DefaultMinManifests, ManifestsInterval: DefaultManifestInterval,
		LifecycleInterval: DefaultLifecycleInterval,
	}
}

// Apply overrides p with the maintenance properties in props (malformed
// values are ignored) and returns the result.
func (p Policy) Apply(props map[string]string) Policy {
	boolean := func(key string, dst *bool) {
		if v, err := strconv.ParseBool(strings.TrimSpace(props[key])); err == nil {
			*dst = v
		}
	}
	positive := func(key string, dst *int64) {
		if v, err := strconv.ParseInt(strings.TrimSpace(props[key]), 10, 64); err == nil && v > 0 {
			*dst = v
		}
	}
	count := func(key string, dst *int) {
		if v, err := strconv.Atoi(strings.TrimSpace(props[key])); err == nil && v > 0 {
			*dst = v
		}
	}
	duration := func(key string, dst *time.Duration) {
		if v, err := ParseDuration(props[key]); err == nil && v > 0 {
			*dst = v
		}
	}
	boolean(PropCompactionEnabled, &p.CompactionEnabled)
	positive(PropTargetFileSize, &p.TargetFileSize)
	count(PropMinInputFiles, &p.MinInputFiles)
	duration(PropCompactionInterval, &p.CompactionInterval)
	boolean(PropExpireEnabled, &p.ExpireEnabled)
	p.Retention = p.Retention.For(props)
	boolean(PropOrphanEnabled, &p.OrphanEnabled)
	duration(PropOrphanMinAge, &p.OrphanMinAge)
	p.OrphanMinAge = max(p.OrphanMinAge, MinOrphanAge)
	duration(PropOrphanInterval, &p.OrphanInterval)
	boolean(PropManifestsEnabled, &p.ManifestsEnabled)
	count(PropMinManifests, &p.MinManifests)
	duration(PropManifestsInterval, &p.ManifestsInterval)
	switch v := strings.TrimSpace(props[PropColdAfter]); v {
	case "0", "off":
		p.ColdAfter = 0
	default:
		duration(PropColdAfter, &p.ColdAfter)
	}
	duration(PropLifecycleInterval, &p.LifecycleInterval)
	if v, ok := props[table.GCEnabledKey]; ok {
		if gc, err := strconv.ParseBool(v); err == nil && !gc {
			// The table's files may be shared with other tables: nothing
			// that deletes files runs.
			p.ExpireEnabled, p.OrphanEnabled = false, false
		}
	}
	return p
}

// ParseDuration reads a policy duration: a Go duration ("90m", "36h") or a
// whole number of days ("3d").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("duration %q: want a Go duration or a whole number of days (3d)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a Go duration or a whole number of days (3d)", s)
	}
	return d, nil
}

// Namespaces reads namespace properties (*catalog.Catalog).
type Namespaces interface {
	NamespaceProperties(ctx context.Context, wh string, ns catalog.Namespace) (map[string]string, error)
}

// Resolver resolves the policy of tables.
type Resolver struct {
	// Namespaces supplies namespace properties; nil uses table properties only.
	Namespaces Namespaces
	// Base is the policy of a table nothing overrides.
	Base Policy
}

// Policy returns the policy of table id of warehouse wh, whose own
// properties are tableProps.
func (r Resolver) Policy(ctx context.Context, wh string, id catalog.Ident, tableProps iceberg.Properties) (Policy, error) {
	p := r.Base
	if r.Namespaces != nil {
		for i := 1; i <= len(id.Namespace); i++ {
			props, err := r.Namespaces.NamespaceProperties(ctx, wh, id.Namespace[:i])
			if err != nil {
				return Policy{}, fmt.Errorf("maintenance policy of %s: namespace %s: %w", id, id.Namespace[:i], err)
			}
			p = p.Apply(props)
		}
	}
	return p.Apply(tableProps), nil
}

// due reports whether a job with period every runs at tick on the table
// named key, given the scheduler's interval: every table runs once per
// period, at a tick that depends on the table so that tables spread out.
func due(tick int64, interval, every time.Duration, key string) bool {
	if interval <= 0 || every <= interval {
		return true
	}
	n := int64(every / interval)
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return (tick+int64(h.Sum32()))%n == 0
}
