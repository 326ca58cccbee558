package catalog

import (
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/floe-lake/floe"
)

// normalizeLocation cleans a location URI: trailing slashes go, "." and ".."
// segments are resolved, and a bare absolute path becomes file://.
func normalizeLocation(loc string) (string, error) {
	if loc == "" {
		return "", floe.E(floe.Invalid, "", "location must not be empty")
	}
	if strings.HasPrefix(loc, "/") {
		loc = "file://" + loc
	}
	u, err := url.Parse(loc)
	if err != nil || u.Scheme == "" {
		return "", floe.E(floe.Invalid, "", "location %q is not a valid URI", loc)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", floe.E(floe.Invalid, "", "location %q must not have a query or fragment", loc)
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	clean := path.Clean(p)
	if clean == "." {
		clean = "/"
	}
	return u.Scheme + "://" + u.Host + strings.TrimSuffix(clean, "/"), nil
}

// within reports whether loc lies inside (or is) root. Both must be normalized.
func within(root, loc string) bool {
	return loc == root || strings.HasPrefix(loc, root+"/")
}

// checkLocation normalizes loc and requires it inside the warehouse, so that a
// client cannot make the server read or write files elsewhere.
func checkLocation(wh Warehouse, loc string) (string, error) {
	return checkAllowed(wh, nil, loc)
}

// NormalizeAllowedLocations normalizes the allowed storage location
// prefixes of Options.AllowedLocations (for configuration checks); an entry
// that is not an absolute location URI (scheme and path) is an error.
func NormalizeAllowedLocations(locs []string) ([]string, error) {
	out := make([]string, 0, len(locs))
	for _, l := range locs {
		n, err := normalizeLocation(l)
		if err != nil {
			return nil, fmt.Errorf("allowed location %q: %w", l, err)
		}
		if strings.HasSuffix(n, "://") || strings.TrimPrefix(strings.TrimPrefix(n, "file://"), "/") == "" {
			return nil, fmt.Errorf("allowed location %q: a whole scheme or file system root cannot be allowed", l)
		}
		out = append(out, n)
	}
	return out, nil
}

// checkAllowed normalizes loc and requires it inside the warehouse or one
// of the allowed prefixes (normalized), so that a client cannot make the
// server read or write files anywhere else.
func checkAllowed(wh Warehouse, allowed []string, loc string) (string, error) {
	root, err := normalizeLocation(wh.Location)
	if err != nil {
		return "", fmt.Errorf("warehouse %s: %w", wh.Name, err)
	}
	n, err := normalizeLocation(loc)
	if err != nil {
		return "", err
	}
	if within(root, n) {
		return n, nil
	}
	for _, a := range allowed {
		if within(a, n) {
			return n, nil
		}
	}
	if len(allowed) == 0 {
		return "", floe.E(floe.Invalid, "", "location %q is outside warehouse %q (%s)", loc, wh.Name, wh.Location)
	}
	return "", floe.E(floe.Invalid, "", "location %q is outside warehouse %q (%s) and the allowed storage locations (%s)", loc, wh.Name, wh.Location, strings.Join(allowed, ", "))
}

// checkTableLocation is checkLocation for a table, which must also not be
// the warehouse root: its files would contain every other table's.
func checkTableLocation(wh Warehouse, loc string) (string, error) {
	return checkTableAllowed(wh, nil, loc)
}

// checkTableAllowed is checkAllowed for a table, which must also not be the
// warehouse root nor an allowed root (its files would contain every other
// table's there), nor inside the reserved prefix.
func checkTableAllowed(wh Warehouse, allowed []string, loc string) (string, error) {
	n, err := checkAllowed(wh, allowed, loc)
	if err != nil {
		return "", err
	}
	root, _ := normalizeLocation(wh.Location)
	if n == root {
		return "", floe.E(floe.Invalid, "", "a table's location cannot be the warehouse root (%s)", loc)
	}
	for _, a := range allowed {
		if n == a {
			return "", floe.E(floe.Invalid, "", "a table's location cannot be an allowed storage location's root (%s)", loc)
		}
	}
	if within(root+"/"+ReservedPrefix, n) {
		return "", floe.E(floe.Invalid, "", "a table's location cannot be inside %s/%s, which Floe reserves for its own objects (audit checkpoints)", root, ReservedPrefix)
	}
	return n, nil
}

// ReservedPrefix is the directory, directly under a warehouse's location,
// that holds Floe's own objects (the audit chain's checkpoints): no table
// may be located in it, so no principal is ever vended credentials for it.
const ReservedPrefix = "_floe"

// LocationProperty is the namespace property that names the directory under
// which engines place the namespace's tables.
const LocationProperty = "location"

// defaultNamespaceLocation is <warehouse>/<ns levels>: the directory in
// which defaultTableLocation places the namespace's tables.
func defaultNamespaceLocation(wh Warehouse, ns Namespace) string {
	parts := make([]string, 0, len(ns)+1)
	parts = append(parts, strings.TrimSuffix(wh.Location, "/"))
	for _, l := range ns {
		parts = append(parts, url.PathEscape(l))
	}
	return strings.Join(parts, "/")
}

// defaultTableLocation is <warehouse>/<ns levels>/<name>-<uuid>: unique per
// table, so a dropped and re-created table never shares files with the old one.
func defaultTableLocation(wh Warehouse, id Ident, tableUUID uuid.UUID) string {
	return defaultNamespaceLocation(wh, id.Namespace) + "/" +
		url.PathEscape(id.Name) + "-" + strings.ReplaceAll(tableUUID.String(), "-", "")
}

// metadataVersion parses the version of a metadata file name such as
// 00003-<uuid>.metadata.json; it returns -1 when there is none.
func metadataVersion(loc string) int {
	base := path.Base(loc)
	if i := strings.IndexByte(base, '-'); i > 0 {
		if v, err := strconv.Atoi(base[:i]); err == nil {
			return v
		}
	}
	if strings.HasPrefix(base, "v") {
		if i := strings.IndexByte(base, '.'); i > 1 {
			if v, err := strconv.Atoi(base[1:i]); err == nil {
				return v
			}
		}
	}
	return -1
}

// nextMetadataLocation names the metadata file that follows prev (version 0 when prev is "").
func nextMetadataLocation(tableLoc, prev string) string {
	v := 0
	if prev != "" {
		v = metadataVersion(prev) + 1
	}
	return fmt.Sprintf("%s/metadata/%05d-%s.metadata.json", strings.TrimSuffix(tableLoc, "/"), v, uuid.New())
}

// checkLocation is checkAllowed with the catalog's allowed locations.
func (c *Catalog) checkLocation(wh Warehouse, loc string) (string, error) {
	return checkAllowed(wh, c.allowed, loc)
}

// checkTableLocation is checkTableAllowed with the catalog's allowed locations.
func (c *Catalog) checkTableLocation(wh Warehouse, loc string) (string, error) {
	return checkTableAllowed(wh, c.allowed, loc)
}
