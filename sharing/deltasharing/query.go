package deltasharing

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/objstore"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/sigv4"
	"github.com/floe-lake/floe/vend"
)

// queryRequest is the body of POST .../query.
type queryRequest struct {
	PredicateHints     []string `json:"predicateHints"`
	JSONPredicateHints *string  `json:"jsonPredicateHints"`
	LimitHint          *int64   `json:"limitHint"`
	Version            *int64   `json:"version"`
	Timestamp          *string  `json:"timestamp"`
	StartingVersion    *int64   `json:"startingVersion"`
	EndingVersion      *int64   `json:"endingVersion"`
	StartingTimestamp  *string  `json:"startingTimestamp"`
	MaxFiles           *int     `json:"maxFiles"`
	PageToken          *string  `json:"pageToken"`
}

// parseQueryRequest decodes a query body (at most max bytes; empty: {}).
func parseQueryRequest(body io.Reader, max int64) (queryRequest, error) {
	var q queryRequest
	b, err := io.ReadAll(io.LimitReader(body, max+1))
	if err != nil {
		return q, malformed("cannot read the request body")
	}
	if int64(len(b)) > max {
		return q, &apiError{status: http.StatusRequestEntityTooLarge, code: codeMalformed,
			msg: "the request body is larger than " + strconv.FormatInt(max, 10) + " bytes"}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return q, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&q); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return q, invalid("invalid value for " + te.Field + ": expected " + te.Type.String())
		}
		return q, malformed("the request body is not a valid JSON object")
	}
	if dec.More() {
		return q, malformed("the request body has more than one JSON value")
	}
	switch {
	case q.LimitHint != nil && *q.LimitHint < 0:
		return q, invalid("limitHint must not be negative")
	case q.MaxFiles != nil && *q.MaxFiles <= 0:
		return q, invalid("maxFiles must be positive")
	case len(q.PredicateHints) > 100:
		return q, invalid("at most 100 predicateHints")
	}
	return q, nil
}

// queryPageToken continues a paged query.
type queryPageToken struct {
	Version int64  `json:"v"`
	Offset  int    `json:"o"`
	Hash    string `json:"h"` // of the table's names and the query's filters
}

func (c *call) queryHash(q queryRequest) string {
	h := sha256.New()
	b, _ := json.Marshal([]any{c.share, c.schema, c.table, q.PredicateHints, q.JSONPredicateHints, q.LimitHint})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// query serves POST .../query.
func (c *call) query() (int, error) {
	c.r.Body = http.MaxBytesReader(c.w, c.r.Body, c.h.opts.MaxBodyBytes+1)
	q, err := parseQueryRequest(c.r.Body, c.h.opts.MaxBodyBytes)
	if err != nil {
		return 0, err
	}
	if err := checkFormat(c.r); err != nil {
		return 0, err
	}
	if q.StartingVersion != nil || q.EndingVersion != nil || q.StartingTimestamp != nil {
		return 0, unsupported("streaming and change queries (startingVersion, endingVersion, startingTimestamp) are not supported " +
			"by Floe's Delta Sharing server: query a version or timestamp")
	}
	rt, err := c.resolve()
	if err != nil {
		return 0, err
	}
	offset := 0
	version, ts := q.Version, ""
	if q.Timestamp != nil {
		ts = *q.Timestamp
	}
	if q.PageToken != nil && *q.PageToken != "" {
		tok, err := decodeQueryToken(*q.PageToken)
		if err != nil || tok.Hash != c.queryHash(q) || tok.Offset < 0 {
			return 0, invalid("invalid pageToken (a page token continues the same query of the same table)")
		}
		if (version != nil && *version != tok.Version) || ts != "" {
			return 0, invalid("a pageToken continues its query: do not change version or timestamp")
		}
		offset = tok.Offset
		if tok.Version != rt.current().version {
			version = &tok.Version // time travel: the history rules apply
		}
	}
	he, err := c.at(rt, version, ts)
	if err != nil {
		return 0, err
	}
	l, err := c.h.listing(c.r.Context(), rt, he)
	if err != nil {
		return 0, err
	}
	name := c.share + "." + c.schema + "." + c.table
	if l.schemaErr != "" {
		return 0, unsupported("table " + name + " cannot be shared over Delta Sharing: " + l.schemaErr)
	}
	if l.deletes != "" {
		return 0, unsupported("table " + name + " has row-level deletes (position or equality delete files) in version " +
			strconv.FormatInt(he.version, 10) + ", which Delta Sharing's parquet format cannot express; the provider can " +
			"make it shareable by compacting it (floe maintain --compact, or rewrite_data_files) so that no delete file remains")
	}
	if l.renamed != "" {
		return 0, unsupported("table " + name + " cannot be shared over Delta Sharing as it is: " + l.renamed +
			" after some of its data files were written, and Delta Sharing clients read columns by name; the provider " +
			"can make it shareable by rewriting its data files (floe maintain --compact, or rewrite_data_files)")
	}
	files, err := c.select_(rt, l, q)
	if err != nil {
		return 0, err
	}
	// Pages.
	maxFiles := c.h.opts.MaxFiles
	paged := q.MaxFiles != nil
	if paged {
		maxFiles = min(*q.MaxFiles, maxFiles)
	} else if len(files) > maxFiles {
		return 0, invalid("table " + name + " has " + strconv.Itoa(len(files)) + " files to list, more than the " +
			strconv.Itoa(maxFiles) + " one response may hold: page the query with maxFiles (and the pageToken of each response)")
	}
	if offset > len(files) {
		return 0, invalid("invalid pageToken")
	}
	end := min(offset+maxFiles, len(files))
	next := ""
	if paged && end < len(files) {
		next = encodeQueryToken(queryPageToken{Version: he.version, Offset: end, Hash: c.queryHash(q)})
	}
	files = files[offset:end]
	return c.writeQuery(rt, l, he.version, files, paged, next)
}

// select_ returns the files of l the share's partition filter allows and
// the hints do not skip, up to limitHint rows.
func (c *call) select_(rt *resolved, l *listing, q queryRequest) ([]*fileEntry, error) {
	var filter *expr
	if rt.t.PartitionFilter != "" {
		e, err := parseSQL(rt.t.PartitionFilter)
		if err != nil {
			// A filter the provider saved but this server cannot read: serve
			// nothing rather than too much.
			return nil, &apiError{status: 500, code: codeInternal, msg: "internal error", err: err}
		}
		filter = e
	}
	var hints []*expr
	for _, s := range q.PredicateHints {
		e, err := parseSQL(s)
		if isBound(err) {
			return nil, invalid("predicateHints: " + err.Error())
		}
		if err == nil { // best effort: a hint we cannot read filters nothing
			hints = append(hints, e)
		}
	}
	if q.JSONPredicateHints != nil && *q.JSONPredicateHints != "" {
		if len(*q.JSONPredicateHints) > MaxPredicateBytes {
			return nil, invalid("jsonPredicateHints is longer than " + strconv.Itoa(MaxPredicateBytes) + " bytes")
		}
		e, err := parseJSONPredicate(*q.JSONPredicateHints)
		if isBound(err) {
			return nil, invalid(err.Error())
		}
		if err == nil {
			hints = append(hints, e)
		}
	}
	out := make([]*fileEntry, 0, len(l.files))
	var rows int64
	for i := range l.files {
		f := &l.files[i]
		if filter != nil && eval(filter, f, false) != yes {
			continue // never listed: outside the share's partition filter
		}
		skip := false
		for _, h := range hints {
			if eval(h, f, true) == no {
				skip = true
				break
			}
		}
		if skip {
			continue
		}
		if q.LimitHint != nil && rows >= *q.LimitHint {
			break
		}
		rows += f.records
		out = append(out, f)
	}
	return out, nil
}

func encodeQueryToken(t queryPageToken) string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeQueryToken(s string) (queryPageToken, error) {
	var t queryPageToken
	if len(s) > maxPageToken {
		return t, errors.New("page token too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, err
	}
	err = json.Unmarshal(b, &t)
	return t, err
}

// fileJSON is a file line's object (encoded by hand for speed).
func (c *call) writeQuery(rt *resolved, l *listing, version int64, files []*fileEntry, paged bool, next string) (int, error) {
	ctx := c.r.Context()
	var signer *urlSigner
	if len(files) > 0 {
		s, err := c.signer(ctx, rt)
		if err != nil {
			return 0, err
		}
		signer = s
	}
	endAction := paged || wantsEndStream(c.r)
	c.setVersion(version)
	c.w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
	caps := "responseformat=parquet"
	if wantsEndStream(c.r) {
		caps += ";includeendstreamaction=true"
	}
	c.w.Header().Set("Delta-Sharing-Capabilities", caps)
	c.w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(c.w, 64<<10)
	enc := json.NewEncoder(bw)
	_ = enc.Encode(map[string]any{"protocol": protocolJSON{MinReaderVersion: 1}})
	_ = enc.Encode(map[string]any{"metaData": c.metaData(rt, l)})
	var expMs int64
	buf := make([]byte, 0, 2048)
	for _, f := range files {
		u, exp, err := signer.sign(f.bucket, f.key)
		if err != nil {
			// Headers are sent: tell the client to fail if it listens.
			c.h.log.ErrorContext(ctx, "delta sharing: sign a file URL", "err", err)
			if wantsEndStream(c.r) {
				_ = enc.Encode(map[string]any{"endStreamAction": map[string]any{"errorMessage": "internal error signing file URLs"}})
			}
			_ = bw.Flush()
			return http.StatusOK, nil
		}
		expMs = exp
		buf = appendFileLine(buf[:0], u, f, exp)
		_, _ = bw.Write(buf)
	}
	if endAction {
		ea := map[string]any{}
		if next != "" {
			ea["nextPageToken"] = next
		}
		if expMs > 0 {
			ea["minUrlExpirationTimestamp"] = expMs
		}
		_ = enc.Encode(map[string]any{"endStreamAction": ea})
	}
	_ = bw.Flush()
	c.detail["files"] = len(files)
	if signer != nil {
		c.auditURLs(rt, signer, len(files))
	}
	return http.StatusOK, nil
}

func appendFileLine(b []byte, u string, f *fileEntry, exp int64) []byte {
	b = append(b, `{"file":{"url":`...)
	b = appendJSONString(b, u)
	b = append(b, `,"id":"`...)
	b = append(b, f.id...)
	b = append(b, `","partitionValues":`...)
	b = append(b, f.partitionValues...)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, f.size, 10)
	b = append(b, `,"stats":`...)
	b = append(b, f.statsJSON...)
	b = append(b, `,"expirationTimestamp":`...)
	b = strconv.AppendInt(b, exp, 10)
	b = append(b, "}}\n"...)
	return b
}

// appendJSONString appends s as a JSON string (without HTML escaping:
// URLs keep their '&').
func appendJSONString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		enc, _ := json.Marshal(s)
		return append(b, enc...)
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 0x20 && ch != '"' && ch != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch ch {
		case '"', '\\':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[ch>>4], hexDigits[ch&15])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

func wantsEndStream(r *http.Request) bool {
	caps := r.Header.Get("Delta-Sharing-Capabilities")
	for kv := range strings.SplitSeq(caps, ";") {
		k, v, _ := strings.Cut(kv, "=")
		if strings.EqualFold(strings.TrimSpace(k), "includeendstreamaction") && strings.EqualFold(strings.TrimSpace(v), "true") {
			return true
		}
	}
	return false
}

// urlSigner pre-signs GETs of a table's files with one credential.
type urlSigner struct {
	creds    sigv4.Credentials
	sess     vend.Session
	endpoint *url.URL // nil: AWS S3 virtual-hosted
	path     bool
	region   string
	now      time.Time
	ttl      time.Duration
	expires  time.Time
	// presigners sign for each host (one, but for AWS S3's per-bucket
	// hosts).
	presigners map[string]*sigv4.S3Presigner
}

// signer checks that the recipient's token still stands and mints the
// response's read-only credential for rt's location.
func (c *call) signer(ctx context.Context, rt *resolved) (*urlSigner, error) {
	o := c.h.opts
	if o.Minter == nil {
		return nil, &apiError{status: 503, code: codeUnavailable, msg: "file URLs cannot be signed: Floe runs without credential vending"}
	}
	revoked, err := o.Resolver.Revoked(ctx, c.rcpt)
	if err != nil {
		return nil, err
	}
	if revoked {
		return nil, &apiError{status: 401, code: codeUnauth, msg: "the bearer token has been revoked or has expired"}
	}
	bucket, prefix, ok := objstore.LocationPrefix(rt.state.Metadata.Location())
	if !ok {
		return nil, &apiError{status: 500, code: codeInternal, msg: "internal error", err: errors.New("table location is not on S3")}
	}
	// Read-objects: the URLs are GETs of listed files; the credential (its
	// secret never leaves the server) could not list anything either.
	s := vend.Session{Principal: sharing.CredentialPrincipal(c.rcpt.Name), PrincipalID: c.rcpt.ID, TokenID: c.rcpt.TokenID,
		Table: rt.t.Ident.String(), Grants: []vend.Grant{{Bucket: bucket, Prefix: prefix, Access: vend.ReadObjects}},
		// The URLs work from the recipient's allowlist only.
		AllowedCIDRs: c.rcpt.AllowedCIDRs}
	creds, sess, err := o.Minter.Mint(ctx, s, o.URLTTL)
	if err != nil {
		return nil, err
	}
	now := o.Now()
	ttl := o.URLTTL
	if left := creds.Expires.Sub(now); !creds.Expires.IsZero() && left < ttl {
		ttl = left
	}
	if ttl < time.Second {
		return nil, floe.E(floe.Unavailable, "credential", "the signing credential expires too soon")
	}
	ttl = ttl.Truncate(time.Second)
	us := &urlSigner{creds: sigv4.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey,
		SessionToken: creds.SessionToken}, sess: sess, path: o.PathStyle, region: o.Region, now: now, ttl: ttl,
		expires: now.Add(ttl)}
	if ep := o.Endpoint(); ep != "" {
		u, err := url.Parse(ep)
		if err != nil {
			return nil, err
		}
		us.endpoint = u
	}
	if us.region == "" {
		us.region = "us-east-1"
	}
	return us, nil
}

// sign returns a pre-signed GET URL of bucket/key and its expiry (Unix ms).
func (s *urlSigner) sign(bucket, key string) (string, int64, error) {
	scheme, host, path := "https", bucket+".s3."+s.region+".amazonaws.com", "/"+key
	if s.endpoint != nil {
		scheme, host, path = s.endpoint.Scheme, s.endpoint.Host, "/"+bucket+"/"+key
		if !s.path {
			host, path = bucket+"."+s.endpoint.Host, "/"+key
		}
	}
	p := s.presigners[host]
	if p == nil {
		var err error
		p, err = sigv4.NewS3Presigner(scheme, host, s.creds, s.region, s.now, s.ttl)
		if err != nil {
			return "", 0, err
		}
		if s.presigners == nil {
			s.presigners = map[string]*sigv4.S3Presigner{}
		}
		s.presigners[host] = p
	}
	return p.PresignGet(path), s.expires.UnixMilli(), nil
}

// auditURLs records the URLs a response issued.
func (c *call) auditURLs(rt *resolved, s *urlSigner, n int) {
	if c.h.opts.Audit == nil {
		return
	}
	e := audit.Event{RequestID: c.rid, Principal: sharing.CredentialPrincipal(c.rcpt.Name), ClientAddr: clientAddr(c.r).String(),
		Action: "deltasharing.urls.issue", Resource: "table:" + rt.t.Warehouse + "." + rt.t.Ident.String(), Outcome: audit.OutcomeSuccess,
		Detail: map[string]any{"count": n, "credential_id": s.sess.ID, "access_key_id": s.sess.AccessKeyID,
			"expires": s.expires.UTC().Format(time.RFC3339), "recipient_id": c.rcpt.ID, "recipient": c.rcpt.Name,
			"token_id": c.rcpt.TokenID, "share": rt.t.Share, "object_id": rt.t.ID,
			"shared_as": rt.t.Share + "." + rt.t.Schema + "." + rt.t.Name}}
	c.h.opts.Audit(c.r.Context(), e)
}
