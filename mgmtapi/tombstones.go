package mgmtapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// Tombstoner lists and releases the kept locations of tables dropped
// without deleting their files (*catalog.Catalog). Both act for
// catalog.ClaimantOf(ctx).
type Tombstoner interface {
	// TombstonesPage lists the tombstones of wh in location order after
	// the location `after`, at most limit of them.
	TombstonesPage(ctx context.Context, wh, after string, limit int) ([]catalog.Tombstone, error)
	// ReleaseTombstone removes the tombstone at loc: Forbidden unless the
	// claimant owns it or is an administrator, NotFound if there is none.
	ReleaseTombstone(ctx context.Context, wh, loc string) (catalog.Tombstone, error)
}

// Tombstone paging: the default and largest page of GET .../tombstones,
// and how many tombstones one request examines at most for a
// non-administrator (who sees only its own).
const (
	DefaultTombstonePage = 100
	MaxTombstonePage     = 1000
	maxTombstoneScan     = 10 * MaxTombstonePage
)

// Tombstone is the wire form of a dropped table's kept location.
type Tombstone struct {
	Location  string   `json:"location"`
	Table     string   `json:"table"`
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
	// Owner is the name of the principal that may reuse or release the
	// location besides administrators; empty when only administrators may.
	Owner     string    `json:"owner,omitempty"`
	DroppedAt time.Time `json:"dropped_at"`
}

// Tombstones is the answer of GET .../tombstones.
type Tombstones struct {
	Tombstones []Tombstone `json:"tombstones"`
	// NextPageToken continues the listing; empty at the end.
	NextPageToken string `json:"next_page_token,omitempty"`
}

// tombstoneRoutes are the dropped-table location operations.
func (h *Handler) tombstoneRoutes() []route {
	const p = "/api/v1/warehouses/{warehouse}/tombstones"
	return []route{
		{"GET", p, "", h.listTombstones},
		{"DELETE", p, "mgmt.tombstone.release", h.releaseTombstone},
	}
}

// tombstones checks that the server serves tombstones.
func (h *Handler) tombstones() (Tombstoner, error) {
	if h.opts.Tombstones == nil {
		return nil, floe.E(floe.Unsupported, "", "dropped-table locations are not managed on this server")
	}
	return h.opts.Tombstones, nil
}

// listTombstones lists a warehouse's tombstones: all of them to an
// administrator, the caller's own to anyone else.
func (h *Handler) listTombstones(c *call) error {
	ts, err := h.tombstones()
	if err != nil {
		return err
	}
	wh := c.r.PathValue("warehouse")
	size, after, err := tombstonePage(c.r.URL.Query())
	if err != nil {
		return err
	}
	out := Tombstones{Tombstones: []Tombstone{}}
	names := h.ownerNames(c)
	for scanned := 0; ; {
		// A non-administrator sees only its own: read whole store pages
		// and filter, examining at most maxTombstoneScan per request.
		batch := size
		if !c.sub.Admin {
			batch = MaxTombstonePage
		}
		page, err := ts.TombstonesPage(c.ctx, wh, after, batch)
		if err != nil {
			return err
		}
		for _, t := range page {
			after = t.Location
			scanned++
			if !c.sub.Admin && (t.Owner == "" || t.Owner != c.sub.PrincipalID) {
				continue
			}
			out.Tombstones = append(out.Tombstones, wireTombstone(t, names))
			if len(out.Tombstones) == size {
				break
			}
		}
		switch {
		case len(out.Tombstones) == size || scanned >= maxTombstoneScan:
			out.NextPageToken = after
			return reply(c, http.StatusOK, out)
		case len(page) < batch:
			return reply(c, http.StatusOK, out)
		}
	}
}

// tombstonePage reads page_size (1 to MaxTombstonePage, default
// DefaultTombstonePage) and page_token from a listing's query.
func tombstonePage(q url.Values) (int, string, error) {
	size := DefaultTombstonePage
	if s := q.Get("page_size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxTombstonePage {
			return 0, "", floe.E(floe.Invalid, "", "page_size must be an integer from 1 to %d (got %q)", MaxTombstonePage, s)
		}
		size = n
	}
	return size, q.Get("page_token"), nil
}

// ownerNames maps principal ids to names for the listing: every principal
// for an administrator, the caller alone for anyone else.
func (h *Handler) ownerNames(c *call) map[string]string {
	names := map[string]string{c.sub.PrincipalID: c.sub.Principal}
	if !c.sub.Admin || h.opts.Principals == nil {
		return names
	}
	ps, err := h.opts.Principals.ListPrincipals(c.ctx)
	if err != nil {
		h.log.WarnContext(c.ctx, "mgmtapi: tombstone owners shown by id", "err", err)
		return names
	}
	for _, p := range ps {
		names[p.ID] = p.Name
	}
	return names
}

func wireTombstone(t catalog.Tombstone, names map[string]string) Tombstone {
	owner := t.Owner
	if n, ok := names[owner]; ok && owner != "" {
		owner = n
	}
	return Tombstone{Location: t.Location, Table: t.Ident.String(), Namespace: []string(t.Ident.Namespace),
		Name: t.Ident.Name, Owner: owner, DroppedAt: t.DroppedAt.UTC()}
}

// releaseTombstone frees the kept location ?location= of a dropped table
// (its owner or an administrator); the files stay.
func (h *Handler) releaseTombstone(c *call) error {
	wh := c.r.PathValue("warehouse")
	loc := c.r.URL.Query().Get("location")
	c.resource = "location:" + wh + "/" + loc
	ts, err := h.tombstones()
	if err != nil {
		return err
	}
	if loc == "" {
		return floe.E(floe.Invalid, "", "give the location to release: ?location=s3://...")
	}
	t, err := ts.ReleaseTombstone(c.ctx, wh, loc)
	if err != nil {
		return err
	}
	c.resource = "location:" + wh + "/" + t.Location
	c.note("table", t.Ident.String(), "owner_id", t.Owner)
	return reply(c, http.StatusOK, wireTombstone(t, h.ownerNames(c)))
}
