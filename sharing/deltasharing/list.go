package deltasharing

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/sharing"
)

type shareJSON struct {
	Name string `json:"name"`
	ID   string `json:"id,omitempty"`
}

type schemaJSON struct {
	Name  string `json:"name"`
	Share string `json:"share"`
}

type tableJSON struct {
	Name    string `json:"name"`
	Schema  string `json:"schema"`
	Share   string `json:"share"`
	ShareID string `json:"shareId,omitempty"`
	ID      string `json:"id,omitempty"`
}

type listJSON[T any] struct {
	Items         []T    `json:"items"`
	NextPageToken string `json:"nextPageToken,omitempty"`
}

// maxPageToken bounds a page token.
const maxPageToken = 2048

// listPage is a list request's paging: at most max items after the key
// after (exclusive).
type listPage struct {
	max   int
	after string
	scope string
}

// parseListPage reads maxResults and pageToken of a list in scope (the
// route and names it lists, so that a token of another list is refused).
func parseListPage(r *http.Request, scope string) (listPage, error) {
	q := r.URL.Query()
	p := listPage{max: DefaultMaxResults, scope: scope}
	if v := q.Get("maxResults"); v != "" || q.Has("maxResults") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, invalid("maxResults must be a non-negative integer")
		}
		p.max = min(n, MaxMaxResults)
	}
	if t := q.Get("pageToken"); t != "" {
		after, err := decodeListToken(t, scope)
		if err != nil {
			return p, err
		}
		p.after = after
	}
	return p, nil
}

type listToken struct {
	Scope string `json:"s"`
	After string `json:"a"`
}

func encodeListToken(scope, after string) string {
	b, _ := json.Marshal(listToken{Scope: scope, After: after})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeListToken(t, scope string) (string, error) {
	if len(t) > maxPageToken {
		return "", invalid("invalid pageToken")
	}
	b, err := base64.RawURLEncoding.DecodeString(t)
	var lt listToken
	if err != nil || json.Unmarshal(b, &lt) != nil || lt.Scope != scope {
		return "", invalid("invalid pageToken")
	}
	return lt.After, nil
}

// page returns the items of keys (sorted ascending) on page p, and the next
// page's token ("" at the end).
func page[T any](items []T, key func(T) string, p listPage) ([]T, string) {
	start := 0
	if p.after != "" {
		start = sort.Search(len(items), func(i int) bool { return key(items[i]) > p.after })
	}
	end := min(start+p.max, len(items))
	out := items[start:end]
	if end < len(items) {
		after := p.after
		if end > start {
			after = key(items[end-1])
		}
		return out, encodeListToken(p.scope, after)
	}
	return out, ""
}

func (c *call) listShares() (int, error) {
	p, err := parseListPage(c.r, "shares")
	if err != nil {
		return 0, err
	}
	shares, err := c.h.opts.Resolver.Shares(c.r.Context(), c.rcpt)
	if err != nil {
		return 0, err
	}
	items := make([]shareJSON, len(shares))
	for i, s := range shares {
		items[i] = shareJSON{Name: s.Name, ID: s.ID}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	out, next := page(items, func(s shareJSON) string { return s.Name }, p)
	return c.writeJSON(listJSON[shareJSON]{Items: out, NextPageToken: next})
}

// findShare returns the share named c.share, or NotFound.
func (c *call) findShare() (sharing.Share, error) {
	shares, err := c.h.opts.Resolver.Shares(c.r.Context(), c.rcpt)
	if err != nil {
		return sharing.Share{}, err
	}
	for _, s := range shares {
		if strings.EqualFold(s.Name, c.share) {
			return s, nil
		}
	}
	return sharing.Share{}, notFound("share " + c.share + " does not exist")
}

func (c *call) getShare() (int, error) {
	s, err := c.findShare()
	if err != nil {
		return 0, err
	}
	return c.writeJSON(map[string]shareJSON{"share": {Name: s.Name, ID: s.ID}})
}

// tables lists the share's objects; a NotFound is the share's.
func (c *call) tables() ([]sharing.Table, error) {
	ts, err := c.h.opts.Resolver.Tables(c.r.Context(), c.rcpt, c.share)
	if floe.KindOf(err) == floe.NotFound {
		return nil, notFound("share " + c.share + " does not exist")
	}
	return ts, err
}

func (c *call) listSchemas() (int, error) {
	p, err := parseListPage(c.r, "schemas/"+c.share)
	if err != nil {
		return 0, err
	}
	ts, err := c.tables()
	if err != nil {
		return 0, err
	}
	seen := map[string]bool{}
	var items []schemaJSON
	for _, t := range ts {
		if !seen[t.Schema] {
			seen[t.Schema] = true
			items = append(items, schemaJSON{Name: t.Schema, Share: t.Share})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	out, next := page(items, func(s schemaJSON) string { return s.Name }, p)
	if out == nil {
		out = []schemaJSON{}
	}
	return c.writeJSON(listJSON[schemaJSON]{Items: out, NextPageToken: next})
}

func (c *call) listTables(all bool) (int, error) {
	scope := "tables/" + c.share + "/" + c.schema
	if all {
		scope = "all-tables/" + c.share
	}
	p, err := parseListPage(c.r, scope)
	if err != nil {
		return 0, err
	}
	ts, err := c.tables()
	if err != nil {
		return 0, err
	}
	var shareID string
	if s, err := c.findShare(); err == nil {
		shareID = s.ID
	}
	var items []tableJSON
	schemaFound := all
	for _, t := range ts {
		if !all && !strings.EqualFold(t.Schema, c.schema) {
			continue
		}
		schemaFound = true
		items = append(items, tableJSON{Name: t.Name, Schema: t.Schema, Share: t.Share, ShareID: shareID, ID: t.ID})
	}
	if !schemaFound {
		return 0, notFound("schema " + c.share + "." + c.schema + " does not exist")
	}
	// Keys sort by schema then name; "\x00" separates them (names hold no
	// control characters).
	key := func(t tableJSON) string { return t.Schema + "\x00" + t.Name }
	sort.Slice(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	out, next := page(items, key, p)
	if out == nil {
		out = []tableJSON{}
	}
	return c.writeJSON(listJSON[tableJSON]{Items: out, NextPageToken: next})
}
