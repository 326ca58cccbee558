package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"

	floe "github.com/floe-lake/floe"
)

// Write is one write forwarded to the remote catalog (writes enabled): a
// spec operation on a path below the remote's prefix, its body passed
// through unchanged.
type Write struct {
	// Operation is the spec name (createTable, updateTable, ...), the
	// audit operation.
	Operation string
	// Method is the HTTP method (POST or DELETE).
	Method string
	// Path is the escaped path below /v1/{prefix}/, as the spec spells it
	// ("namespaces/a%1Fb/tables"); see NamespacePath and TablePath.
	Path string
	// Query is sent as the query string (may be nil).
	Query url.Values
	// Body is the request body, sent as application/json (nil: none).
	Body []byte
	// Delegate asks for vended credentials with the answer
	// (X-Iceberg-Access-Delegation: vended-credentials).
	Delegate bool
	// Commit marks an operation whose outcome is unknown when no answer
	// arrives after sending, or the remote answers 500, 502 or 504: it
	// is then Indeterminate (the client must not clean up its files),
	// never Unavailable.
	Commit bool
	// Entity and Object name what a 404 is about ("table", "table a.t").
	Entity, Object string
}

// WriteResult is the remote's successful answer to a Write.
type WriteResult struct {
	// Status is the HTTP status (2xx).
	Status int
	// Body is the answer's body (empty for 204), at most the table bound.
	Body []byte
}

// NamespacePath is the escaped path of a namespace below the prefix:
// "namespaces/<ns joined by 0x1F>" (rest, if any, appended after a "/").
func NamespacePath(ns []string, rest ...string) string {
	p := "namespaces/" + url.PathEscape(nsParam(ns))
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// TablePath is the escaped path of a table below the prefix.
func TablePath(ns []string, name string, rest ...string) string {
	return NamespacePath(ns, append([]string{"tables", url.PathEscape(name)}, rest...)...)
}

// Write forwards w to the remote with this client's identity and returns
// its 2xx answer. Any other answer is a domain error that keeps the
// remote's status meaning (and its ErrorModel's type and message, cut to
// 300 characters): 400 Invalid, 403 Forbidden (the remote refused this
// client's identity the write), 404 NotFound, 406 Unsupported, 409
// AlreadyExists, NotEmpty or Conflict (by the ErrorModel's type), 422
// Unprocessable; 401 (after one token renewal) and other statuses are
// Unavailable, and so are 5xx answers and transport failures except for a
// Commit, whose 500, 502, 504 or lost answer is Indeterminate; a SigV4
// remote's 401 or 403 is Unavailable naming the signing scope. Callers
// drop the cache entries the write may change (Invalidate), whatever the
// outcome. Every request is audited (Options.Audit).
func (c *Client) Write(ctx context.Context, w Write) (*WriteResult, error) {
	if w.Method != http.MethodPost && w.Method != http.MethodDelete {
		return nil, floe.E(floe.Invalid, "", "write %s: method %s is not forwarded", w.Operation, w.Method)
	}
	if !relativePath(w.Path) {
		return nil, floe.E(floe.Invalid, "", "write %s: invalid path", w.Operation)
	}
	p, err := c.path(ctx, w.Path)
	if err != nil {
		return nil, err
	}
	o := op{name: w.Operation, method: w.Method, path: p, query: w.Query, limit: maxTableBody, header: http.Header{},
		entity: w.Entity, object: w.Object, body: w.Body, write: true, commit: w.Commit}
	if w.Body != nil {
		o.header.Set("Content-Type", "application/json")
	}
	if w.Delegate {
		o.header.Set("X-Iceberg-Access-Delegation", "vended-credentials")
	}
	resp, err := c.do(ctx, o)
	if err != nil {
		return nil, err
	}
	if resp.status == http.StatusNotModified {
		return nil, c.unavailable(fmt.Errorf("%s: HTTP 304", w.Operation), "unexpected HTTP 304")
	}
	return &WriteResult{Status: resp.status, Body: resp.body}, nil
}

// relativePath reports whether p is a relative path of plain segments:
// not empty, no query or fragment, no empty, "." or ".." segment.
func relativePath(p string) bool {
	if p == "" || strings.ContainsAny(p, "?#") {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// Invalidate drops the cached answers a write on namespace ns (and on its
// table or view name, when not "") may have changed: the namespace lists,
// the namespace's properties, its table and view lists, and the object's
// loads. Other nodes keep theirs until their TTL runs out.
func (c *Client) Invalidate(ns []string, name string) {
	if c.cache == nil {
		return
	}
	nsp := "/" + NamespacePath(ns)
	c.cache.dropWhere(func(key string) bool {
		kind, path, _ := strings.Cut(key, "\x00")
		path, _, _ = strings.Cut(path, "?")
		switch kind {
		case "ns-list":
			return true
		case "ns":
			return strings.HasSuffix(path, nsp)
		case "list":
			return strings.HasSuffix(path, nsp+"/tables") || strings.HasSuffix(path, nsp+"/views")
		case "table", "view":
			return name != "" && (strings.HasSuffix(path, nsp+"/tables/"+url.PathEscape(name)) ||
				strings.HasSuffix(path, nsp+"/views/"+url.PathEscape(name)))
		}
		return false
	})
}

// errorTypeRE is the shape of an ErrorModel type kept from a remote answer.
var errorTypeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.$]{0,127}$`)

// remoteErrorType is the ErrorModel type of an answer ("" when it has none
// of a sane shape).
func remoteErrorType(body []byte) string {
	var em struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &em) != nil || !errorTypeRE.MatchString(em.Error.Type) {
		return ""
	}
	return em.Error.Type
}

// writeError maps the remote's error answer to a forwarded write to a
// domain error that keeps its meaning for the Floe caller.
func (c *Client) writeError(o op, r *response) error {
	msg := remoteMessage(r.body)
	typ := remoteErrorType(r.body)
	suffix := ""
	if msg != "" {
		suffix = ": " + msg
	}
	cause := fmt.Errorf("%s %s: HTTP %d", o.method, o.path, r.status)
	e := func(k floe.Kind, entity string) error {
		return &floe.Error{Kind: k, Entity: entity, Err: cause,
			Msg: fmt.Sprintf("foreign catalog %s answered %s with HTTP %d%s", c.o.Name, o.name, r.status, suffix)}
	}
	switch r.status {
	case http.StatusBadRequest:
		return e(floe.Invalid, "")
	case http.StatusForbidden:
		if c.sig != nil {
			return c.sigv4Refused(cause, r)
		}
		return &floe.Error{Kind: floe.Forbidden, Entity: "privilege", Err: cause,
			Msg: fmt.Sprintf("foreign catalog %s refused Floe's write identity %s (HTTP 403)%s", c.o.Name, o.name, suffix)}
	case http.StatusUnauthorized:
		if c.sig != nil {
			return c.sigv4Refused(cause, r)
		}
		return floe.Wrap(floe.Unavailable, cause, "foreign catalog %s refused Floe's write credentials (HTTP 401)%s", c.o.Name, suffix)
	case http.StatusNotFound:
		entity := o.entity
		switch typ {
		case "NoSuchNamespaceException":
			entity = "namespace"
		case "NoSuchTableException":
			entity = "table"
		case "NoSuchViewException":
			entity = "view"
		}
		return e(floe.NotFound, entity)
	case http.StatusNotAcceptable:
		return e(floe.Unsupported, "")
	case http.StatusConflict:
		switch {
		case typ == "AlreadyExistsException":
			return e(floe.AlreadyExists, o.entity)
		case typ == "NamespaceNotEmptyException":
			return e(floe.NotEmpty, "namespace")
		case typ == "CommitFailedException", o.commit:
			return e(floe.Conflict, "")
		}
		return e(floe.AlreadyExists, o.entity)
	case http.StatusUnprocessableEntity:
		return e(floe.Unprocessable, "")
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		if o.commit {
			return floe.Wrap(floe.Indeterminate, cause, "foreign catalog %s answered %s with HTTP %d: the commit may or may not have been applied%s", c.o.Name, o.name, r.status, suffix)
		}
	}
	if r.status >= 500 {
		return c.unavailable(cause, "HTTP %d%s", r.status, suffix)
	}
	return c.unavailable(cause, "unexpected HTTP %d%s", r.status, suffix)
}

// writeTransportError is the error of a forwarded write that got no
// answer: a commit that may have reached the remote is Indeterminate.
func (c *Client) writeTransportError(o op, err error) error {
	var dnsErr *net.DNSError
	if !o.commit || errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dnsErr) {
		return c.transportError(err) // never sent
	}
	var fe *floe.Error
	if errors.As(err, &fe) { // already classified (oversized answer)
		return floe.Wrap(floe.Indeterminate, err, "%s: the commit may or may not have been applied", fe.Msg)
	}
	return floe.Wrap(floe.Indeterminate, err, "foreign catalog %s did not answer %s (%s): the commit may or may not have been applied",
		c.o.Name, o.name, floe.PublicMessage(c.transportError(err)))
}
