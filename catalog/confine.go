package catalog

import (
	"container/list"
	"context"
	"net/url"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/ocfscan"
)

// Within reports whether the file (or prefix) at location loc lies inside
// the table location root, or is root itself. Both are compared as object
// keys, literally: the scheme lower-cased (s3a and s3n are s3), empty and
// "." segments dropped. A location with a ".." segment, or a segment that
// would read as "." or ".." or hold a "/" or "\" once percent-decoded, is
// never inside: no reader can then resolve it to a place outside root.
func Within(root, loc string) bool {
	r, ok := confineKey(root)
	if !ok {
		return false
	}
	l, ok := confineKey(loc)
	if !ok {
		return false
	}
	return l == r || strings.HasPrefix(l, r+"/")
}

// confineKey normalizes loc for Within; ok is false when loc is not a
// location or holds a segment that could leave its directory.
func confineKey(loc string) (string, bool) {
	scheme, rest, found := strings.Cut(loc, "://")
	if !found {
		if !strings.HasPrefix(loc, "/") {
			return "", false
		}
		scheme, rest = "file", loc
	}
	scheme = strings.ToLower(scheme)
	if scheme == "" || strings.ContainsAny(scheme, "/?#") {
		return "", false
	}
	if scheme == "s3a" || scheme == "s3n" {
		scheme = "s3"
	}
	host, key, _ := strings.Cut(rest, "/")
	var b strings.Builder
	b.WriteString(scheme)
	b.WriteString("://")
	b.WriteString(host)
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." {
			continue
		}
		if seg == ".." || strings.ContainsRune(seg, '\\') {
			return "", false
		}
		if strings.ContainsRune(seg, '%') {
			dec, err := url.PathUnescape(seg)
			if err != nil || dec == "." || dec == ".." || strings.ContainsAny(dec, "/\\") {
				return "", false
			}
		}
		b.WriteByte('/')
		b.WriteString(seg)
	}
	return b.String(), true
}

// OutsideError returns the error of kind for a file (described by what:
// "data file", "manifest list", ...) that lies outside the table location
// root.
func OutsideError(kind floe.Kind, what, file, root string) error {
	return floe.E(kind, "file", "%s %s is outside the table location %s: a table may reference only files inside its own location", what, file, root)
}

// check returns an Invalid OutsideError unless file is inside the
// confiner's root (normalized once per check, not once per file).
func (cf *confiner) check(what, file string) error {
	if cf.rootKey == "" {
		k, ok := confineKey(cf.root)
		if !ok {
			return OutsideError(floe.Invalid, what, file, cf.root)
		}
		cf.rootKey = k + "/"
	}
	if l, ok := confineKey(file); ok && (l == cf.rootKey[:len(cf.rootKey)-1] || strings.HasPrefix(l, cf.rootKey)) {
		return nil
	}
	return OutsideError(floe.Invalid, what, file, cf.root)
}

// confiner checks the files a table's metadata references against the
// table location, reading manifest lists and manifests through the
// catalog's FileIO (so that encrypted objects read). Within one check each
// manifest list is read once.
type confiner struct {
	c        *Catalog
	root     string
	rootKey  string // confineKey(root) + "/", set by the first check
	lists    map[string][]string
	verified []verifiedList // to remember once the whole check passed
}

// checkFiles verifies that every file next references and base did not
// lies inside next's location: for each snapshot next adds, its manifest
// list, each manifest in it, and every entry (in every status) of each
// manifest that is not in the manifest list of the snapshot's parent; and
// the statistics files next adds. With base nil (a create or a register)
// or when the location changes, every file next references is checked.
// Manifests of a parent in base were checked when they were committed, so
// an append reads only its own manifest list, its parent's (unless this
// catalog checked it recently: checkedLists) and its new manifests.
func (c *Catalog) checkFiles(ctx context.Context, base, next table.Metadata) error {
	cf := &confiner{c: c, root: next.Location(), lists: map[string][]string{}}
	all := base == nil || base.Location() != next.Location()
	old := map[int64]bool{}
	if !all {
		for _, s := range base.Snapshots() {
			old[s.SnapshotID] = true
		}
	}
	for _, s := range next.Snapshots() {
		if old[s.SnapshotID] {
			continue
		}
		var trusted map[string]bool
		if !all && s.ParentSnapshotID != nil {
			if p := base.SnapshotByID(*s.ParentSnapshotID); p != nil {
				ms, err := cf.manifestSet(ctx, p)
				if err != nil {
					return err
				}
				trusted = ms
			}
		}
		if err := cf.snapshot(ctx, &s, trusted); err != nil {
			return err
		}
	}
	oldStats := map[string]bool{}
	if !all {
		for st := range base.Statistics() {
			oldStats[st.StatisticsPath] = true
		}
		for st := range base.PartitionStatistics() {
			oldStats[st.StatisticsPath] = true
		}
	}
	for st := range next.Statistics() {
		if !oldStats[st.StatisticsPath] {
			if err := cf.check("statistics file", st.StatisticsPath); err != nil {
				return err
			}
		}
	}
	for st := range next.PartitionStatistics() {
		if !oldStats[st.StatisticsPath] {
			if err := cf.check("partition statistics file", st.StatisticsPath); err != nil {
				return err
			}
		}
	}
	for _, v := range cf.verified {
		c.checked.add(cf.root, v.loc, v.manifests)
	}
	return nil
}

// manifestSet returns the manifest paths of a snapshot of the base
// metadata (trusted: they were checked when committed).
func (cf *confiner) manifestSet(ctx context.Context, s *table.Snapshot) (map[string]bool, error) {
	if s.ManifestList == "" {
		out := map[string]bool{}
		for _, m := range s.ManifestLocations {
			out[m] = true
		}
		return out, nil
	}
	if set, ok := cf.c.checked.get(cf.root, s.ManifestList); ok {
		return set, nil
	}
	ms, err := cf.list(ctx, s.ManifestList)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(ms))
	for _, m := range ms {
		out[m] = true
	}
	return out, nil
}

// list reads the manifest paths of the manifest list at loc (once per
// check).
func (cf *confiner) list(ctx context.Context, loc string) ([]string, error) {
	if ms, ok := cf.lists[loc]; ok {
		return ms, nil
	}
	raw, err := cf.c.io.ReadFile(ctx, loc)
	if err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "cannot read manifest list %s", loc)
	}
	ms, err := cf.c.scanner.ManifestPaths(raw)
	if err != nil {
		return nil, floe.Wrap(floe.Invalid, err, "manifest list %s is not valid: %s", loc, err)
	}
	cf.lists[loc] = ms
	return ms, nil
}

// snapshot checks a snapshot's manifest list, its manifests, and the
// entries of every manifest not in trusted.
func (cf *confiner) snapshot(ctx context.Context, s *table.Snapshot, trusted map[string]bool) error {
	if s.ManifestList == "" {
		if len(s.ManifestLocations) > 0 {
			return floe.E(floe.Invalid, "commit", "snapshot %d lists its manifests inline; Floe accepts only snapshots with a manifest list", s.SnapshotID)
		}
		return nil
	}
	if err := cf.check("manifest list", s.ManifestList); err != nil {
		return err
	}
	ms, err := cf.list(ctx, s.ManifestList)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := cf.check("manifest", m); err != nil {
			return err
		}
		if trusted[m] {
			continue
		}
		if err := cf.manifest(ctx, m); err != nil {
			return err
		}
	}
	set := make(map[string]bool, len(ms))
	for _, m := range ms {
		set[m] = true
	}
	cf.verified = append(cf.verified, verifiedList{s.ManifestList, set})
	return nil
}

// verifiedList is a manifest list a check found clean, with its manifests.
type verifiedList struct {
	loc       string
	manifests map[string]bool
}

// manifest checks every entry of a manifest, deleted ones included.
func (cf *confiner) manifest(ctx context.Context, loc string) error {
	raw, err := cf.c.io.ReadFile(ctx, loc)
	if err != nil {
		return floe.Wrap(floe.Invalid, err, "cannot read manifest %s", loc)
	}
	var outside error
	err = cf.c.scanner.EntryPaths(raw, func(path string, content int32) error {
		what := "data file"
		if content != ocfscan.ContentData {
			what = "delete file"
		}
		outside = cf.check(what, path)
		return outside
	})
	if outside != nil {
		return outside
	}
	if err != nil {
		return floe.Wrap(floe.Invalid, err, "manifest %s is not valid: %s", loc, err)
	}
	return nil
}

// Bounds of the cache of checked manifest lists.
const (
	checkedListEntries = 512
	checkedListPaths   = 200_000
)

// checkedLists remembers, by table location and manifest list location,
// the manifests of manifest lists the catalog has checked (all inside the
// location, and their entries too), so that the next commit on top of one
// does not read it again. Least recently used out first, within a number
// of lists and a total number of manifest paths. Safe for concurrent use.
type checkedLists struct {
	mu         sync.Mutex
	maxEntries int
	maxPaths   int
	paths      int
	entries    map[string]*list.Element // of *checkedList
	lru        *list.List               // front: most recently used
}

type checkedList struct {
	key       string
	manifests map[string]bool
}

func newCheckedLists(maxEntries, maxPaths int) *checkedLists {
	return &checkedLists{maxEntries: maxEntries, maxPaths: maxPaths, entries: map[string]*list.Element{}, lru: list.New()}
}

func checkedKey(root, listLoc string) string { return root + "\x00" + listLoc }

func (c *checkedLists) get(root, listLoc string) (map[string]bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[checkedKey(root, listLoc)]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*checkedList).manifests, true
}

func (c *checkedLists) add(root, listLoc string, manifests map[string]bool) {
	if len(manifests) > c.maxPaths {
		return
	}
	k := checkedKey(root, listLoc)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		c.lru.MoveToFront(el)
		return
	}
	c.entries[k] = c.lru.PushFront(&checkedList{key: k, manifests: manifests})
	c.paths += len(manifests)
	for c.lru.Len() > c.maxEntries || c.paths > c.maxPaths {
		el := c.lru.Back()
		v := el.Value.(*checkedList)
		c.lru.Remove(el)
		delete(c.entries, v.key)
		c.paths -= len(v.manifests)
	}
}

// len returns the number of lists and of manifest paths held.
func (c *checkedLists) len() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.paths
}
