package restcat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// readJSON reads a JSON body into v after checking that each required
// top-level field is present and not null.
func readJSON(r *http.Request, v any, required ...string) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if len(required) > 0 {
		if err := requireFields(body, required...); err != nil {
			return err
		}
	}
	return decodeBytes(body, v)
}

func decodeBytes(body []byte, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = floe.E(floe.Invalid, "", "malformed request body: %v", p)
		}
	}()
	if len(strings.TrimSpace(string(body))) == 0 {
		return floe.E(floe.Invalid, "", "request body is empty")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return floe.Wrap(floe.Invalid, err, "malformed request body: %s", trimMsg(err.Error()))
	}
	return nil
}

func trimMsg(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// requireFields checks that each named top-level key is present in a JSON object.
func requireFields(body []byte, names ...string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return floe.Wrap(floe.Invalid, err, "malformed request body: expected a JSON object")
	}
	for _, n := range names {
		if v, ok := obj[n]; !ok || string(v) == "null" {
			return floe.E(floe.Invalid, "", "missing required field %q", n)
		}
	}
	return nil
}

func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, floe.E(floe.Invalid, "", "request body is larger than %d bytes", mbe.Limit)
		}
		return nil, floe.Wrap(floe.Invalid, err, "cannot read request body")
	}
	return body, nil
}

// namespaceParam parses the {namespace} path segment (levels joined by 0x1F).
func namespaceParam(r *http.Request) (catalog.Namespace, error) {
	raw := r.PathValue("namespace")
	ns := catalog.Namespace(strings.Split(raw, catalog.Sep))
	if err := ns.Validate(); err != nil {
		return nil, err
	}
	return ns, nil
}

// nsRequest resolves the warehouse prefix and the {namespace} segment.
func (h *Handler) nsRequest(r *http.Request) (string, catalog.Namespace, error) {
	wh, err := h.warehouse(r)
	if err != nil {
		return "", nil, err
	}
	ns, err := namespaceParam(r)
	return wh, ns, err
}

// identRequest resolves the warehouse prefix and a table or view identifier
// from the path ({namespace} plus the segment named param).
func (h *Handler) identRequest(r *http.Request, param string) (string, catalog.Ident, error) {
	wh, err := h.warehouse(r)
	if err != nil {
		return "", catalog.Ident{}, err
	}
	id, err := identParam(r, param)
	return wh, id, err
}

func identParam(r *http.Request, name string) (catalog.Ident, error) {
	ns, err := namespaceParam(r)
	if err != nil {
		return catalog.Ident{}, err
	}
	id := catalog.Ident{Namespace: ns, Name: r.PathValue(name)}
	return id, id.Validate()
}

// page holds parsed pagination parameters.
type page struct {
	after    string
	limit    int  // <= 0: unlimited
	paginate bool // the client asked for pages: respond with next-page-token
}

// pageParams reads pageToken and pageSize. Without either, all results are
// returned. pageSize is an upper bound whenever it is given.
func pageParams(r *http.Request) (page, error) {
	q := r.URL.Query()
	var p page
	if q.Has("pageToken") {
		p.paginate = true
		if tok := q.Get("pageToken"); tok != "" {
			after, err := decodePageToken(tok)
			if err != nil {
				return p, err
			}
			p.after = after
		}
	}
	if s := q.Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return p, floe.E(floe.Invalid, "", "pageSize must be a positive integer")
		}
		p.limit = min(n, 10000)
		p.paginate = true
	} else if p.paginate {
		p.limit = 1000
	}
	return p, nil
}

// warehouseCache remembers known warehouses for a few seconds.
type warehouseCache struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (h *Handler) warehouse(r *http.Request) (string, error) {
	name := r.PathValue("prefix")
	h.whCache.mu.Lock()
	seen, ok := h.whCache.m[name]
	h.whCache.mu.Unlock()
	if ok && time.Since(seen) < 10*time.Second {
		return name, nil
	}
	if _, err := h.cat.Warehouse(r.Context(), name); err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return "", floe.E(floe.NotFound, "warehouse", "Warehouse does not exist: %s", name)
		}
		return "", fmt.Errorf("warehouse %s: %w", name, err)
	}
	h.whCache.mu.Lock()
	if h.whCache.m == nil {
		h.whCache.m = map[string]time.Time{}
	}
	h.whCache.m[name] = time.Now()
	h.whCache.mu.Unlock()
	return name, nil
}
