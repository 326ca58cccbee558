package sigv4

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

const upperhex = "0123456789ABCDEF"

// isUnreserved reports whether c is left as is by AWS URI encoding.
func isUnreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// uriEncode percent-encodes every byte of s except the unreserved
// characters (and '/' when keepSlash), with upper-case hex digits.
func uriEncode(s string, keepSlash bool) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isUnreserved(c) && (c != '/' || !keepSlash) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) || c == '/' && keepSlash {
			b = append(b, c)
		} else {
			b = append(b, '%', upperhex[c>>4], upperhex[c&15])
		}
	}
	return string(b)
}

// normalizePath removes empty, "." and ".." segments from p (a ".." at the
// root is dropped). A leading and a trailing slash are kept.
func normalizePath(p string) string {
	if p == "" {
		return "/"
	}
	segs := make([]string, 0, strings.Count(p, "/")+1)
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, seg)
		}
	}
	out := "/" + strings.Join(segs, "/")
	if len(segs) > 0 && strings.HasSuffix(p, "/") {
		out += "/"
	}
	return out
}

// canonicalURI returns the canonical URI of a request whose path appears on
// the wire (percent-encoded) as wire. S3 (normalize=false) signs the decoded
// path encoded once; other services normalize the wire path and encode it
// again.
func canonicalURI(wire string, normalize bool) string {
	if wire == "" {
		wire = "/"
	}
	if normalize {
		return uriEncode(normalizePath(wire), true)
	}
	dec, err := url.PathUnescape(wire)
	if err != nil {
		dec = wire
	}
	return uriEncode(dec, true)
}

// urlWirePath returns the path a Go HTTP client sends for u: the path part
// of u.Opaque when set (either "//host/path" or "/path"), else
// u.EscapedPath().
func urlWirePath(u *url.URL) string {
	if u.Opaque != "" {
		o := u.Opaque
		if i := strings.IndexByte(o, '?'); i >= 0 {
			o = o[:i]
		}
		if rest, ok := strings.CutPrefix(o, "//"); ok {
			i := strings.IndexByte(rest, '/')
			if i < 0 {
				return "/"
			}
			return rest[i:]
		}
		return o
	}
	if p := u.EscapedPath(); p != "" {
		return p
	}
	return "/"
}

// requestWirePath returns the path of r as the client sent it: the path of
// r.RequestURI for server requests (so that a handler mounted under a
// stripped prefix still verifies), else the path r.URL would be sent with.
func requestWirePath(r *http.Request) string {
	uri := r.RequestURI
	if uri == "" || uri == "*" {
		return urlWirePath(r.URL)
	}
	if i := strings.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	if strings.HasPrefix(uri, "/") {
		return uri
	}
	if i := strings.Index(uri, "://"); i >= 0 { // absolute-form
		rest := uri[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			return rest[j:]
		}
		return "/"
	}
	return urlWirePath(r.URL)
}

// queryParam is one decoded query parameter.
type queryParam struct{ key, value string }

// parseQuery splits a raw query string into decoded parameters, in order.
// '+' decodes to a space as in url.ParseQuery; a component with an invalid
// escape is kept verbatim.
func parseQuery(raw string) []queryParam {
	if raw == "" {
		return nil
	}
	ps := make([]queryParam, 0, strings.Count(raw, "&")+1)
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		ps = append(ps, queryParam{key: queryUnescape(k), value: queryUnescape(v)})
	}
	return ps
}

func queryUnescape(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	d, err := url.QueryUnescape(s)
	if err != nil {
		return s
	}
	return d
}

// canonicalQuery encodes and sorts ps, skipping parameters named skip (the
// signature of a presigned request). AWS sorts by encoded name, then
// encoded value; with byDecoded it sorts by decoded name and value instead,
// as aws-sdk-go-v2 does (url.Values.Encode), which differs only for names
// or values whose encoding changes their order.
func canonicalQuery(ps []queryParam, skip string, byDecoded bool) string {
	type enc struct{ k, v, dk, dv string }
	es := make([]enc, 0, len(ps))
	size := 0
	for _, p := range ps {
		if skip != "" && p.key == skip {
			continue
		}
		e := enc{k: uriEncode(p.key, false), v: uriEncode(p.value, false), dk: p.key, dv: p.value}
		size += len(e.k) + len(e.v) + 2
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool {
		if byDecoded {
			if es[i].dk != es[j].dk {
				return es[i].dk < es[j].dk
			}
			return es[i].dv < es[j].dv
		}
		if es[i].k != es[j].k {
			return es[i].k < es[j].k
		}
		return es[i].v < es[j].v
	})
	var b strings.Builder
	b.Grow(size)
	for i, e := range es {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(e.k)
		b.WriteByte('=')
		b.WriteString(e.v)
	}
	return b.String()
}

// canonicalValue trims s and collapses runs of spaces, as the AWS SDKs do.
func canonicalValue(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "  ") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' && i > 0 && s[i-1] == ' ' {
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// joinValues returns the canonical form of a header's values.
func joinValues(vs []string) string {
	switch len(vs) {
	case 0:
		return ""
	case 1:
		return canonicalValue(vs[0])
	}
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(canonicalValue(v))
	}
	return b.String()
}

// headerValues returns the values of the header named lower (lower-case)
// as received: Host and Transfer-Encoding, which net/http moves out of
// r.Header, come from r.Host and r.TransferEncoding.
func headerValues(r *http.Request, lower string) []string {
	switch lower {
	case "host":
		h := r.Host
		if h == "" && r.URL != nil {
			h = r.URL.Host
		}
		return []string{h}
	case "content-length":
		if vs := r.Header["Content-Length"]; len(vs) > 0 {
			return vs
		}
		if r.ContentLength >= 0 {
			return []string{strconv.FormatInt(r.ContentLength, 10)}
		}
		return nil
	case "transfer-encoding":
		if vs := r.Header["Transfer-Encoding"]; len(vs) > 0 {
			return vs
		}
		if len(r.TransferEncoding) > 0 {
			return []string{strings.Join(r.TransferEncoding, ",")}
		}
		return nil
	}
	if vs, ok := r.Header[textproto.CanonicalMIMEHeaderKey(lower)]; ok {
		return vs
	}
	var out []string // header set through the map with a non-canonical key
	for k, vs := range r.Header {
		if strings.EqualFold(k, lower) {
			out = append(out, vs...)
		}
	}
	return out
}

// canonicalRequest holds the parts of a SigV4 canonical request.
type canonicalRequest struct {
	method        string
	uri           string
	query         string
	names         []string // signed header names, lower-case, in order
	values        []string // canonical values, parallel to names
	signedHeaders string   // names joined with ';'
	payloadHash   string
}

// String returns the canonical request text.
func (c *canonicalRequest) String() string {
	return string(c.appendTo(nil))
}

func (c *canonicalRequest) appendTo(b []byte) []byte {
	b = append(b, c.method...)
	b = append(b, '\n')
	b = append(b, c.uri...)
	b = append(b, '\n')
	b = append(b, c.query...)
	b = append(b, '\n')
	for i, n := range c.names {
		b = append(b, n...)
		b = append(b, ':')
		b = append(b, c.values[i]...)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	b = append(b, c.signedHeaders...)
	b = append(b, '\n')
	b = append(b, c.payloadHash...)
	return b
}

// hash returns the hex SHA-256 of the canonical request.
func (c *canonicalRequest) hash() string {
	var buf [1024]byte
	sum := sha256.Sum256(c.appendTo(buf[:0]))
	return hex.EncodeToString(sum[:])
}
