package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	floe "github.com/floe-lake/floe"
)

// op is one remote operation: what to send and how to name its failures.
type op struct {
	name   string // audit operation: loadTable, listNamespaces, ...
	method string
	path   string // escaped path after the base URI, starting with /v1/
	query  url.Values
	header http.Header
	limit  int64  // bound of the response body
	entity string // of a 404: "table", "view", "namespace"
	object string // of a 404: "table ns.t"
	// parse decodes a 2xx answer before the call is audited, so that a
	// malformed answer is audited as a failure.
	parse func(*response) error
	// body is the request body (nil: none); write marks a forwarded write
	// (its errors keep the remote's meaning, see writeError), commit one
	// whose lost answer is Indeterminate.
	body          []byte
	write, commit bool
}

// response is a remote answer with its body read.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends o, with a token renewal and one retry on a 401 under OAuth2,
// and returns a 2xx or 304 answer; any other outcome is a domain error.
func (c *Client) do(ctx context.Context, o op) (*response, error) {
	stale := ""
	for attempt := 0; ; attempt++ {
		tok, err := c.bearer(ctx, stale)
		if err != nil {
			return nil, err
		}
		resp, err := c.send(ctx, o, tok)
		if err != nil {
			return nil, err
		}
		if resp.status == http.StatusUnauthorized && c.o.Auth.Kind == "oauth2" && attempt == 0 {
			c.log.DebugContext(ctx, "foreign catalog refused the token; renewing", "catalog", c.o.Name, "operation", o.name)
			stale = tok
			continue
		}
		if c.sig != nil && attempt == 0 && expiredCredentials(resp) {
			c.log.DebugContext(ctx, "foreign catalog says the AWS credentials expired; refreshing", "catalog", c.o.Name, "operation", o.name)
			c.sig.invalidate()
			continue
		}
		if resp.status/100 == 2 || resp.status == http.StatusNotModified {
			return resp, nil
		}
		return nil, c.errorOf(o, resp)
	}
}

// errorOf maps a remote error answer to a domain error: a forwarded
// write's keeps the remote's meaning, a read's is statusError's.
func (c *Client) errorOf(o op, r *response) error {
	if o.write {
		return c.writeError(o, r)
	}
	return c.statusError(o, r)
}

// send performs one HTTP exchange and audits it. A non-2xx status is not
// an error here; a transport failure or an oversized body is.
func (c *Client) send(ctx context.Context, o op, tok string) (*response, error) {
	u := c.base + o.path
	if len(o.query) > 0 {
		u += "?" + o.query.Encode()
	}
	var body io.Reader
	if o.body != nil {
		body = bytes.NewReader(o.body)
	}
	req, err := http.NewRequestWithContext(ctx, o.method, u, body)
	if err != nil {
		return nil, c.unavailable(fmt.Errorf("build request: %w", err), "invalid request URL")
	}
	for k, vs := range c.o.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	for k, vs := range o.header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if c.sig != nil {
		if err := c.sign(ctx, req, o.body); err != nil {
			return nil, err
		}
	}
	return c.exchange(ctx, o, req)
}

// exchange sends req, reads its body up to o.limit and audits the call.
func (c *Client) exchange(ctx context.Context, o op, req *http.Request) (*response, error) {
	start := c.o.Now()
	call := Call{Catalog: c.o.Name, Identity: c.o.Identity, Operation: o.name, Method: req.Method, Path: req.URL.EscapedPath()}
	finish := func(err error) {
		call.Latency = c.o.Now().Sub(start)
		if err != nil {
			call.Err = floe.PublicMessage(err)
		}
		if c.o.Audit != nil {
			c.o.Audit(ctx, call)
		}
	}
	hr, err := c.hc.Do(req)
	if err != nil {
		err = c.lost(o, err)
		finish(err)
		return nil, err
	}
	defer hr.Body.Close()
	call.Status = hr.StatusCode
	body, err := io.ReadAll(io.LimitReader(hr.Body, o.limit+1))
	if err != nil {
		err = c.lost(o, err)
		finish(err)
		return nil, err
	}
	if int64(len(body)) > o.limit {
		err = c.unavailable(fmt.Errorf("%s: body over %d bytes", o.name, o.limit), "answer larger than %d bytes", o.limit)
		if o.commit && hr.StatusCode/100 == 2 {
			err = c.lost(o, err)
		}
		finish(err)
		return nil, err
	}
	resp := &response{status: hr.StatusCode, header: hr.Header, body: body}
	switch {
	case resp.status/100 == 2 && o.parse != nil:
		if err := o.parse(resp); err != nil {
			finish(err)
			return nil, err
		}
		finish(nil)
	case resp.status/100 == 2 || resp.status == http.StatusNotModified:
		finish(nil)
	default:
		finish(c.errorOf(o, resp))
	}
	return resp, nil
}

// lost classifies a request that got no (usable) answer: a transport
// failure, or for a commit that may have been applied, Indeterminate.
func (c *Client) lost(o op, err error) error {
	if o.commit {
		return c.writeTransportError(o, err)
	}
	return c.transportError(err)
}

// unavailable is the error of a remote that cannot serve now.
func (c *Client) unavailable(cause error, format string, args ...any) error {
	e := floe.Wrap(floe.Unavailable, cause, "foreign catalog %s is unavailable: %s", c.o.Name, fmt.Sprintf(format, args...))
	return e
}

// transportError classifies a failure to get an answer.
func (c *Client) transportError(err error) error {
	var dnsErr *net.DNSError
	var ne net.Error
	why := "request failed"
	switch {
	case errors.Is(err, context.Canceled):
		why = "request canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		why = "request timed out"
	case errors.As(err, &dnsErr):
		why = "host not found"
	case errors.Is(err, syscall.ECONNREFUSED):
		why = "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		why = "connection reset"
	}
	return c.unavailable(err, "%s", why)
}

// statusError maps a remote error status to a domain error.
func (c *Client) statusError(o op, r *response) error {
	msg := remoteMessage(r.body)
	suffix := ""
	if msg != "" {
		suffix = ": " + msg
	}
	cause := fmt.Errorf("%s %s: HTTP %d", o.method, o.path, r.status)
	switch {
	case r.status == http.StatusNotFound && o.entity != "":
		return &floe.Error{Kind: floe.NotFound, Entity: o.entity, Err: cause,
			Msg: fmt.Sprintf("%s does not exist in foreign catalog %s%s", o.object, c.o.Name, suffix)}
	case r.status == http.StatusBadRequest || r.status == http.StatusUnprocessableEntity:
		return &floe.Error{Kind: floe.Invalid, Entity: o.entity, Err: cause,
			Msg: fmt.Sprintf("foreign catalog %s rejected the request (HTTP %d)%s", c.o.Name, r.status, suffix)}
	case (r.status == http.StatusUnauthorized || r.status == http.StatusForbidden) && c.sig != nil:
		return c.sigv4Refused(cause, r)
	case r.status == http.StatusUnauthorized || r.status == http.StatusForbidden:
		return floe.Wrap(floe.Unavailable, cause, "foreign catalog %s refused Floe's credentials (HTTP %d)%s", c.o.Name, r.status, suffix)
	case r.status >= 500:
		return c.unavailable(cause, "HTTP %d%s", r.status, suffix)
	default:
		return c.unavailable(cause, "unexpected HTTP %d%s", r.status, suffix)
	}
}

// remoteMessage is the message of an Iceberg ErrorModel body (or an OAuth2
// error), cleaned of control characters and cut to maxMessage characters;
// "" when the body is not one. Nothing else of the body is ever kept.
func remoteMessage(body []byte) string {
	var em struct {
		Error json.RawMessage `json:"error"`
		Desc  string          `json:"error_description"`
	}
	if json.Unmarshal(body, &em) != nil {
		return ""
	}
	var msg string
	var model struct {
		Message string `json:"message"`
	}
	var code string
	switch {
	case json.Unmarshal(em.Error, &model) == nil && model.Message != "":
		msg = model.Message
	case json.Unmarshal(em.Error, &code) == nil && code != "": // OAuth2 error
		msg = code
		if em.Desc != "" {
			msg += ": " + em.Desc
		}
	}
	return clean(msg, maxMessage)
}

// clean drops control characters and invalid UTF-8 and keeps at most n runes.
func clean(s string, n int) string {
	var b strings.Builder
	count := 0
	for _, r := range s {
		if count == n {
			b.WriteString("…")
			break
		}
		if r == utf8.RuneError || r < 0x20 || r == 0x7f {
			r = ' '
		}
		b.WriteRune(r)
		count++
	}
	return b.String()
}

// decode unmarshals a success body; malformed JSON is Unavailable.
func (c *Client) decode(o op, r *response, v any) error {
	if err := json.Unmarshal(r.body, v); err != nil {
		return c.unavailable(fmt.Errorf("%s: decode: %w", o.name, err), "malformed %s answer", o.name)
	}
	return nil
}

// since reports whether d has passed since t on the client's clock.
func (c *Client) since(t time.Time, d time.Duration) bool { return !c.o.Now().Before(t.Add(d)) }

// isJSONObject reports whether b is a JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) >= 2 && b[0] == '{' && json.Valid(b)
}

// refused is the error of a remote that refuses Floe's own credentials: an
// operator problem, so the Floe caller sees Unavailable (503).
func (c *Client) refused(cause error, format string, args ...any) error {
	return &floe.Error{Kind: floe.Unavailable, Msg: fmt.Sprintf(format, args...), Err: cause}
}
