package sharecat

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/lake/subset"
	"github.com/floe-lake/floe/objstore"
	"github.com/floe-lake/floe/restcat"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/vend"
)

// resolve returns the shared table the request path names; anything the
// recipient may not read through this catalog is the same NoSuchTable.
func (h *Handler) resolve(r *http.Request, c *call) (sharing.Table, error) {
	schema, ok := schemaParam(r)
	name := r.PathValue("table")
	if !ok || name == "" {
		return sharing.Table{}, notFoundFor(r)
	}
	t, err := h.tableCached(r.Context(), c.recipient, c.share, schema, name)
	if floe.KindOf(err) == floe.NotFound {
		return sharing.Table{}, notFoundFor(r)
	}
	if err != nil {
		return sharing.Table{}, resolverError(err)
	}
	if t.IsView || t.Share != c.share || t.Schema != schema || t.Name != name {
		return sharing.Table{}, notFoundFor(r)
	}
	return t, nil
}

// alias is the name the recipient sees: share.schema.table.
func alias(t sharing.Table) string { return t.Share + "." + t.Schema + "." + t.Name }

// load resolves and loads the shared table, refusing a filtered one when
// this server cannot derive its view.
func (h *Handler) load(r *http.Request, c *call) (sharing.Table, *catalog.TableState, error) {
	t, err := h.resolve(r, c)
	if err != nil {
		return t, nil, err
	}
	if t.PartitionFilter != "" && (h.opts.Views == nil || h.opts.FileFilter == nil) {
		return t, nil, floe.E(floe.Forbidden, "", "table %s.%s is shared with a partition filter, which this share catalog cannot enforce "+
			"with storage credentials: read it through Delta Sharing (the share's profile file)", t.Schema, t.Name)
	}
	st, err := h.opts.Tables.LoadTable(r.Context(), t.Warehouse, t.Ident)
	if floe.KindOf(err) == floe.NotFound {
		// Shared but dropped since: as if it were not shared. The catalog's
		// message names the real table, so it is not passed on.
		return t, nil, notFoundFor(r)
	}
	if err != nil {
		return t, nil, floe.Wrap(floe.Unavailable, err, "table %s.%s cannot be loaded now", t.Schema, t.Name)
	}
	return t, st, nil
}

// served is what loadTable serves of a shared table: its metadata, and the
// grant of the recipient's credential.
type served struct {
	metadata    []byte
	location    string // the metadata file's location, "" if none
	bucket      string
	prefix      string // of the credential's grant
	access      vend.Access
	tablePrefix string // the table's location prefix (storage-credential prefix)
	ok          bool   // the table is on S3: a credential can be vended
}

// serveTable decides what a recipient is served of st: with history (and no
// filter) the table's own metadata and a read credential for its location;
// otherwise the derived view of its current snapshot (lake/subset) and a
// credential that reads that view's files only. mode is loadTable's
// snapshots parameter.
func (h *Handler) serveTable(r *http.Request, t sharing.Table, st *catalog.TableState, mode string) (served, error) {
	out := served{metadata: st.JSON, location: st.Location, access: vend.Read}
	bucket, prefix, ok := objstore.LocationPrefix(st.Metadata.Location())
	out.bucket, out.prefix, out.tablePrefix, out.ok = bucket, prefix, prefix, ok
	switch {
	case t.History && t.PartitionFilter == "":
		if mode == "refs" {
			out.metadata = st.RefsOnlyJSON()
		}
		return out, nil
	case h.opts.Views == nil:
		return out, floe.E(floe.Unsupported, "", "table %s.%s is shared without history, which this server serves only on "+
			"its embedded store (a derived snapshot that STS credentials cannot express): ask the provider to share it "+
			"with history", t.Schema, t.Name)
	}
	v, err := h.view(r, t, st)
	if err != nil {
		return out, err
	}
	out.metadata, out.location, out.access = v.Metadata, v.MetadataLocation, vend.ReadListed
	if b, k, err := objstore.ParseLocation(v.Dir); err == nil && ok {
		out.bucket, out.prefix = b, k
	} else {
		out.ok = false
	}
	return out, nil
}

// view returns the derived view of st's current snapshot for t: only live
// files, and with a partition filter only the files it allows. Cached by
// metadata location and filter.
func (h *Handler) view(r *http.Request, t sharing.Table, st *catalog.TableState) (*subset.View, error) {
	key := st.Location + "\x00" + t.PartitionFilter
	if st.Location != "" {
		if v, ok := h.views.get(key); ok {
			return v, nil
		}
	}
	trimmed, err := h.currentOnly(st)
	if err != nil {
		return nil, err
	}
	req := subset.Request{Metadata: st.Metadata, MetadataLocation: st.Location, Trimmed: trimmed}
	if t.PartitionFilter != "" {
		dec, err := h.opts.FileFilter(t.PartitionFilter, st.Metadata)
		if err != nil {
			// A filter the provider saved but this server cannot read: serve
			// nothing rather than too much.
			return nil, floe.Wrap(floe.Internal, err, "internal error")
		}
		req.Filter, req.Filtered = t.PartitionFilter, true
		req.Keep = func(df iceberg.DataFile) (bool, error) {
			switch d := dec.Decide(df); {
			case d > 0:
				return true, nil
			case d < 0 || df.ContentType() == iceberg.EntryContentData:
				// A delete file outside the filter applies to no file inside it.
				return false, nil
			}
			return false, floe.E(floe.Forbidden, "", "table %s.%s has delete files that its share's partition filter cannot place "+
				"(written under a partition spec without the filtered columns): compact the table (floe maintenance run) to share it "+
				"with this filter, or read it through Delta Sharing", t.Schema, t.Name)
		}
	}
	v, err := subset.Build(r.Context(), h.opts.Views, req)
	if floe.KindOf(err) == floe.Forbidden {
		return nil, err
	}
	if err != nil {
		return nil, floe.Wrap(floe.Unavailable, err, "table %s.%s cannot be served now", t.Schema, t.Name)
	}
	if st.Location != "" {
		h.views.put(key, v)
	}
	return v, nil
}

func (h *Handler) tableExists(w http.ResponseWriter, r *http.Request, c *call) error {
	if _, err := h.resolve(r, c); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) loadTable(w http.ResponseWriter, r *http.Request, c *call) error {
	mode := r.URL.Query().Get("snapshots")
	if mode != "" && mode != "all" && mode != "refs" {
		return floe.E(floe.Invalid, "", "snapshots must be 'all' or 'refs', not %q", mode)
	}
	t, st, err := h.load(r, c)
	if err != nil {
		return err
	}
	sv, err := h.serveTable(r, t, st, mode)
	if err != nil {
		return err
	}
	tail := []byte(`,"config":{}}`)
	if sv.ok && h.opts.Vending != nil {
		v, err := h.vend(r, c, t, sv, true)
		if err != nil {
			return err
		}
		tail = v.tail
		w.Header().Set("Cache-Control", "no-store")
	}
	head := []byte(`{"metadata-location":null,"metadata":`)
	if sv.location != "" {
		loc, _ := json.Marshal(sv.location)
		head = append(append([]byte(`{"metadata-location":`), loc...), `,"metadata":`...)
	}
	md := sv.metadata
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(md)+len(tail)))
	w.WriteHeader(http.StatusOK)
	for _, p := range [][]byte{head, md, tail} {
		if _, err := w.Write(p); err != nil {
			break
		}
	}
	return nil
}

// loadCredentials serves GET .../credentials: a freshly minted credential.
func (h *Handler) loadCredentials(w http.ResponseWriter, r *http.Request, c *call) error {
	t, st, err := h.load(r, c)
	if err != nil {
		return err
	}
	if h.opts.Vending == nil {
		return floe.E(floe.Unsupported, "", "this server does not vend storage credentials")
	}
	creds := []storageCredential{}
	sv, err := h.serveTable(r, t, st, "")
	if err != nil {
		return err
	}
	if sv.ok {
		v, err := h.vend(r, c, t, sv, false)
		if err != nil {
			return err
		}
		creds = v.access.StorageCredentials
	}
	w.Header().Set("Cache-Control", "no-store")
	httperr.JSON(w, http.StatusOK, map[string]any{"storage-credentials": creds})
	return nil
}

type storageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

type tableAccess struct {
	Config             map[string]string   `json:"config"`
	StorageCredentials []storageCredential `json:"storage-credentials,omitempty"`
}

// vended is a credential handed out, with the LoadTableResult members that
// carry it, encoded once.
type vended struct {
	sess   vend.Session
	minted time.Time
	access tableAccess
	tail   []byte // `,"config":{...},"storage-credentials":[...]}`
}

// credKey identifies a credential that may be handed out again: the same
// recipient token, shared table (by its alias) and location.
type credKey struct {
	tokenID, recipientID, table, location string
}

// vendReuse is how long after minting a credential loadTable hands it out
// again (every client still gets almost the full TTL; every mint is audited).
const vendReuse = time.Minute

// vend returns a read-only credential for the shared table's location,
// minted for the recipient's token (reused within vendReuse when reuse).
func (h *Handler) vend(r *http.Request, c *call, t sharing.Table, sv served, reuse bool) (*vended, error) {
	v := h.opts.Vending
	bucket, prefix := sv.bucket, sv.prefix
	key := credKey{tokenID: c.recipient.TokenID, recipientID: c.recipient.ID, table: alias(t), location: bucket + "/" + prefix}
	if reuse {
		if got, ok := h.creds.get(key); ok && h.opts.Now().Sub(got.minted) < vendReuse &&
			(v.Revoked == nil || v.Revoked(&got.sess) == nil) {
			c.credID = got.sess.ID
			return got, nil
		}
	}
	// Without history (or with a filter) the recipient gets a derived
	// current snapshot: its credential reads that snapshot's files only
	// (read-listed), never the table's other files nor a listing.
	access := sv.access
	s := vend.Session{Principal: sharing.CredentialPrincipal(c.recipient.Name), PrincipalID: c.recipient.ID, TokenID: c.recipient.TokenID,
		Table: alias(t), Grants: []vend.Grant{{Bucket: bucket, Prefix: prefix, Access: access}}}
	s.AllowedCIDRs = c.recipient.AllowedCIDRs
	ttl := v.TTL
	if exp := c.recipient.TokenExpiry; !exp.IsZero() && exp.Sub(h.opts.Now()) < ttl {
		ttl = exp.Sub(h.opts.Now()) // vend raises it to its minimum lifetime
	}
	creds, sess, err := v.Minter.Mint(r.Context(), s, ttl)
	if err != nil {
		return nil, floe.Wrap(floe.Unavailable, err, "cannot vend storage credentials for %s.%s", t.Schema, t.Name)
	}
	c.credID = sess.ID
	h.auditVend(r, c, t, sess)
	sc := v.ClientConfig()
	maps.Copy(sc, restcat.CredentialConfig(creds))
	cfg := maps.Clone(sc)
	cfg["client.refresh-credentials-endpoint"] = "v1/" + url.PathEscape(t.Share) + "/namespaces/" +
		url.PathEscape(t.Schema) + "/tables/" + url.PathEscape(t.Name) + "/credentials"
	cfg["client.refresh-credentials-enabled"] = "true"
	out := &vended{sess: sess, minted: h.opts.Now(),
		access: tableAccess{Config: cfg, StorageCredentials: []storageCredential{{Prefix: "s3://" + bucket + "/" + sv.tablePrefix, Config: sc}}}}
	b, err := json.Marshal(out.access)
	if err != nil {
		return nil, floe.Wrap(floe.Internal, err, "internal error")
	}
	b[0] = ','
	out.tail = b
	if reuse {
		h.creds.put(key, out)
	}
	return out, nil
}

// auditVend records a credential handed out to a recipient.
func (h *Handler) auditVend(r *http.Request, c *call, t sharing.Table, s vend.Session) {
	if h.opts.Audit == nil {
		return
	}
	g := s.Grants[0]
	h.opts.Audit(r.Context(), audit.Event{RequestID: c.rid, Principal: "recipient:" + c.recipient.Name,
		ClientAddr: httperr.ClientAddr(r), Action: "storage.credentials.vend", Resource: "table:" + alias(t),
		Outcome: audit.OutcomeSuccess, Detail: map[string]any{
			"credential_id": s.ID, "access_key_id": s.AccessKeyID, "access": g.Access.String(),
			"location": "s3://" + g.Bucket + "/" + g.Prefix, "expires": s.Expires.UTC().Format(time.RFC3339),
			"token_id": s.TokenID, "recipient": c.recipient.Name, "recipient_id": c.recipient.ID,
			"share": t.Share, "object_id": t.ID, "table": alias(t)}})
}

// currentOnly returns st's metadata with only its current snapshot: the
// other snapshots, their log entries and statistics, every ref but main
// and the metadata log are dropped. Cached by metadata location.
func (h *Handler) currentOnly(st *catalog.TableState) ([]byte, error) {
	if st.Location != "" {
		if b, ok := h.trim.get(st.Location); ok {
			return b, nil
		}
	}
	b, err := trimHistory(st.JSON, st.Metadata)
	if err != nil {
		return nil, floe.Wrap(floe.Internal, err, "internal error")
	}
	if st.Location != "" {
		h.trim.put(st.Location, b)
	}
	return b, nil
}

// trimHistory implements currentOnly on raw metadata JSON.
func trimHistory(raw []byte, md table.Metadata) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("trim table metadata: %w", err)
	}
	cur := int64(-1)
	if s := md.CurrentSnapshot(); s != nil {
		cur = s.SnapshotID
	}
	keep := func(field, idKey string) {
		var items []map[string]json.RawMessage
		if json.Unmarshal(obj[field], &items) != nil {
			delete(obj, field)
			return
		}
		kept := []map[string]json.RawMessage{}
		for _, it := range items {
			var id int64
			if json.Unmarshal(it[idKey], &id) == nil && id == cur && cur != -1 {
				kept = append(kept, it)
			}
		}
		obj[field], _ = json.Marshal(kept)
	}
	keep("snapshots", "snapshot-id")
	keep("snapshot-log", "snapshot-id")
	if _, ok := obj["statistics"]; ok {
		keep("statistics", "snapshot-id")
	}
	if _, ok := obj["partition-statistics"]; ok {
		keep("partition-statistics", "snapshot-id")
	}
	obj["metadata-log"] = json.RawMessage(`[]`)
	var refs map[string]json.RawMessage
	_ = json.Unmarshal(obj["refs"], &refs)
	main := map[string]json.RawMessage{}
	if m, ok := refs["main"]; ok && cur != -1 {
		main["main"] = m
	}
	obj["refs"], _ = json.Marshal(main)
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("trim table metadata: %w", err)
	}
	return out, nil
}

// bounded is a map of at most max entries that starts afresh when full.
type bounded[K comparable, V any] struct {
	mu  sync.Mutex
	max int
	m   map[K]V
}

func newBounded[K comparable, V any](max int) *bounded[K, V] {
	return &bounded[K, V]{max: max, m: map[K]V{}}
}

func (b *bounded[K, V]) get(k K) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[k]
	return v, ok
}

func (b *bounded[K, V]) put(k K, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[k]; !ok && len(b.m) >= b.max {
		clear(b.m)
	}
	b.m[k] = v
}

func (b *bounded[K, V]) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}
