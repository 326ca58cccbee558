package restcat

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

type createTableRequest struct {
	Name          string                 `json:"name"`
	Location      string                 `json:"location"`
	Schema        *iceberg.Schema        `json:"schema"`
	PartitionSpec *iceberg.PartitionSpec `json:"partition-spec"`
	WriteOrder    *table.SortOrder       `json:"write-order"`
	StageCreate   bool                   `json:"stage-create"`
	Properties    map[string]string      `json:"properties"`
}

type commitTableRequest struct {
	Identifier   *tableIdentifier   `json:"identifier"`
	Requirements table.Requirements `json:"requirements"`
	Updates      table.Updates      `json:"updates"`
}

type commitTransactionRequest struct {
	TableChanges []json.RawMessage `json:"table-changes"`
}

type renameRequest struct {
	Source      *tableIdentifier `json:"source"`
	Destination *tableIdentifier `json:"destination"`
}

type registerRequest struct {
	Name             string `json:"name"`
	MetadataLocation string `json:"metadata-location"`
	Overwrite        bool   `json:"overwrite"`
}

// tableResult returns a LoadTableResult (or CommitTableResponse) body in
// parts around the metadata, which is already compact JSON: it is neither
// re-encoded nor copied. A LoadTableResult carries acc (config and storage
// credentials); a CommitTableResponse passes nil.
func tableResult(st *catalog.TableState, metadata []byte, acc *tableAccess) [][]byte {
	head := []byte(`{"metadata-location":null,"metadata":`)
	if st.Location != "" {
		loc, _ := json.Marshal(st.Location)
		head = append(append([]byte(`{"metadata-location":`), loc...), `,"metadata":`...)
	}
	tail := []byte(`}`)
	if acc != nil {
		tail = acc.resultTail()
	}
	return [][]byte{head, metadata, tail}
}

// writeTable sends a table's full metadata (a CommitTableResponse, or a
// LoadTableResult when acc is set) with its ETag.
func writeTable(w http.ResponseWriter, st *catalog.TableState, acc *tableAccess) {
	if st.Location != "" {
		w.Header().Set("ETag", etag(st.Location, "all"))
	}
	writeRaw(w, http.StatusOK, tableResult(st, st.JSON, acc))
}

// loadResult sends a LoadTableResult for a table just created, registered
// or loaded, with the storage access the caller gets. Responses carrying
// credentials are marked Cache-Control: no-store.
func (h *Handler) loadResult(w http.ResponseWriter, r *http.Request, wh string, id catalog.Ident, st *catalog.TableState, md []byte) error {
	acc, err := h.access(r, wh, id, st.Metadata.Location())
	if err != nil {
		return err
	}
	if acc.StorageCredentials != nil || len(acc.Config) > 0 {
		w.Header().Set("Cache-Control", "no-store")
	}
	if st.Location != "" && w.Header().Get("ETag") == "" {
		w.Header().Set("ETag", etag(st.Location, "all"))
	}
	writeRaw(w, http.StatusOK, tableResult(st, md, &acc))
	return nil
}

// etag identifies one metadata version in one representation.
func etag(loc, mode string) string {
	sum := sha256.Sum256([]byte(loc + "\x00" + mode))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// writeRaw sends a JSON body given as consecutive parts.
func writeRaw(w http.ResponseWriter, status int, parts [][]byte) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(status)
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return
		}
	}
}

func (h *Handler) createTable(w http.ResponseWriter, r *http.Request) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil {
		return err
	}
	var req createTableRequest
	if err := readJSON(r, &req, "name", "schema"); err != nil {
		return err
	}
	if err := h.authorizeCreateTable(r, wh, ns); err != nil {
		return err
	}
	st, err := h.cat.CreateTable(r.Context(), wh, ns, catalog.CreateTableRequest{
		Name: req.Name, Schema: req.Schema, Spec: req.PartitionSpec, SortOrder: req.WriteOrder,
		Location: req.Location, Properties: req.Properties, Stage: req.StageCreate,
	})
	if err != nil {
		return err
	}
	id := catalog.Ident{Namespace: ns, Name: req.Name}
	if !req.StageCreate {
		h.owned(r, authz.Table(wh, id)) // a staged create is owned when it is committed
	}
	return h.loadResult(w, r, wh, id, st, st.JSON)
}

func (h *Handler) loadTable(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "table")
	if err != nil {
		return err
	}
	mode := r.URL.Query().Get("snapshots")
	switch mode {
	case "", "all":
		mode = "all"
	case "refs":
	default:
		return floe.E(floe.Invalid, "", "snapshots must be 'all' or 'refs', not %q", mode)
	}
	if err := h.require(r, authz.Describe, authz.Table(wh, id)); err != nil {
		return err
	}
	ent, err := h.cat.TableLocationInfo(r.Context(), wh, id)
	if err != nil {
		return err
	}
	tag := etag(ent.MetadataLocation, mode)
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, tag) {
		w.Header().Set("ETag", tag)
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	st, err := h.cat.LoadTableAt(r.Context(), ent.MetadataLocation)
	if err != nil {
		return err
	}
	md := st.JSON
	if mode == "refs" {
		md = st.RefsOnlyJSON()
	}
	w.Header().Set("ETag", tag)
	return h.loadResult(w, r, wh, id, st, md)
}

// etagMatch implements If-None-Match matching (weak comparison, lists, "*").
func etagMatch(header, tag string) bool {
	for _, part := range bytes.Split([]byte(header), []byte(",")) {
		p := string(bytes.TrimSpace(part))
		if p == "*" || p == tag || p == "W/"+tag {
			return true
		}
	}
	return false
}

func (h *Handler) tableExists(w http.ResponseWriter, r *http.Request) error {
	return h.exists(w, r, "table", catalog.KindTable)
}

func (h *Handler) viewExists(w http.ResponseWriter, r *http.Request) error {
	return h.exists(w, r, "view", catalog.KindView)
}

func (h *Handler) exists(w http.ResponseWriter, r *http.Request, param string, kind catalog.Kind) error {
	wh, err := h.warehouse(r)
	if err != nil {
		return err
	}
	id, err := identParam(r, param)
	if floe.KindOf(err) == floe.Invalid {
		// No table or view can have a name that is not valid (one with a
		// "/", say): it does not exist, as the reference answers.
		w.WriteHeader(http.StatusNotFound)
		return nil
	}
	if err != nil {
		return err
	}
	if err := h.require(r, authz.Describe, securable(wh, id, kind)); err != nil {
		return err
	}
	ok, err := h.cat.Exists(r.Context(), wh, id, kind)
	if err != nil {
		return err
	}
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		return nil
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// parseCommit decodes a CommitTableRequest, requiring both lists.
func parseCommit(body []byte) (commitTableRequest, error) {
	var req commitTableRequest
	if err := requireFields(body, "requirements", "updates"); err != nil {
		return req, err
	}
	err := decodeBytes(body, &req)
	return req, err
}

// readTableCommit reads a commitTable body (returned as read) for table
// id, refusing an identifier in the body that is not the path's.
func readTableCommit(r *http.Request, id catalog.Ident) (catalog.TableCommit, []byte, error) {
	body, err := readBody(r)
	if err != nil {
		return catalog.TableCommit{}, nil, err
	}
	req, err := parseCommit(body)
	if err != nil {
		return catalog.TableCommit{}, nil, err
	}
	if req.Identifier != nil {
		bid, err := req.Identifier.ident()
		if err != nil {
			return catalog.TableCommit{}, nil, err
		}
		if bid.String() != id.String() || bid.Namespace.Key() != id.Namespace.Key() {
			return catalog.TableCommit{}, nil, floe.E(floe.Invalid, "", "identifier %s in the body does not match the path %s", bid, id)
		}
	}
	return catalog.TableCommit{Ident: id, Requirements: req.Requirements, Updates: req.Updates}, body, nil
}

func (h *Handler) commitTable(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "table")
	if err != nil {
		return err
	}
	tc, _, err := readTableCommit(r, id)
	if err != nil {
		return err
	}
	if err := h.requireCommit(r, wh, tc); err != nil {
		return err
	}
	st, err := h.cat.CommitTable(r.Context(), wh, tc)
	if err != nil {
		return err
	}
	h.ownCreated(r, wh, tc)
	h.reportBrokenFilters(w, r, wh, tc)
	writeTable(w, st, nil)
	return nil
}

func (h *Handler) commitTransaction(w http.ResponseWriter, r *http.Request) error {
	wh, err := h.warehouse(r)
	if err != nil {
		return err
	}
	var req commitTransactionRequest
	if err := readJSON(r, &req, "table-changes"); err != nil {
		return err
	}
	commits, err := transactionCommits(req)
	if err != nil {
		return err
	}
	for _, tc := range commits {
		if err := h.requireCommit(r, wh, tc); err != nil {
			return err
		}
	}
	if err := h.cat.CommitTransaction(r.Context(), wh, commits); err != nil {
		return err
	}
	for _, tc := range commits {
		h.ownCreated(r, wh, tc)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) dropTable(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "table")
	if err != nil {
		return err
	}
	purge := false
	if s := r.URL.Query().Get("purgeRequested"); s != "" {
		if purge, err = strconv.ParseBool(s); err != nil {
			return floe.E(floe.Invalid, "", "purgeRequested must be true or false")
		}
	}
	if err := h.authorizeDropTable(r, wh, id); err != nil {
		return err
	}
	if r, err = h.dropper(r, wh, id); err != nil {
		return err
	}
	if err := h.cat.DropTable(r.Context(), wh, id, purge); err != nil {
		return err
	}
	h.dropped(r, authz.Table(wh, id))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) registerTable(w http.ResponseWriter, r *http.Request) error {
	wh, ns, err := h.nsRequest(r)
	if err != nil {
		return err
	}
	var req registerRequest
	if err := readJSON(r, &req, "name", "metadata-location"); err != nil {
		return err
	}
	id := catalog.Ident{Namespace: ns, Name: req.Name}
	if err := h.authorizeRegister(r, wh, id, req.Overwrite); err != nil {
		return err
	}
	st, err := h.cat.RegisterTable(r.Context(), wh, id, req.MetadataLocation, req.Overwrite)
	if err != nil {
		return err
	}
	if !req.Overwrite {
		h.owned(r, authz.Table(wh, id))
	}
	return h.loadResult(w, r, wh, id, st, st.JSON)
}

func (h *Handler) unregisterTable(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "table")
	if err != nil {
		return err
	}
	if err := h.require(r, authz.Drop, authz.Table(wh, id)); err != nil {
		return err
	}
	if r, err = h.dropper(r, wh, id); err != nil {
		return err
	}
	st, err := h.cat.UnregisterTable(r.Context(), wh, id)
	if err != nil {
		return err
	}
	h.dropped(r, authz.Table(wh, id))
	writeRaw(w, http.StatusOK, tableResult(st, st.JSON, nil))
	return nil
}

func (h *Handler) reportMetrics(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "table")
	if err != nil {
		return err
	}
	if err := h.require(r, authz.Describe, authz.Table(wh, id)); err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if err := requireFields(body, "report-type"); err != nil {
		return err
	}
	if ok, err := h.cat.Exists(r.Context(), wh, id, catalog.KindTable); err != nil {
		return err
	} else if !ok {
		return floe.E(floe.NotFound, "table", "Table does not exist: %s", id)
	}
	h.log.DebugContext(r.Context(), "metrics report", "table", id.String(), "bytes", len(body))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) rename(w http.ResponseWriter, r *http.Request, kind catalog.Kind) error {
	wh, err := h.warehouse(r)
	if err != nil {
		return err
	}
	var req renameRequest
	if err := readJSON(r, &req, "source", "destination"); err != nil {
		return err
	}
	from, err := req.Source.ident()
	if err != nil {
		return err
	}
	to, err := req.Destination.ident()
	if err != nil {
		return err
	}
	if err := h.authorizeRename(r, wh, from, to, kind); err != nil {
		return err
	}
	if err := h.cat.Rename(r.Context(), wh, from, to, kind); err != nil {
		return err
	}
	h.renamed(r, wh, from, to, kind)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// authorizeRename: DROP on the object and CREATE_TABLE (CREATE_VIEW) in
// the target namespace; a move into another namespace changes what covers
// the object there (the target's AllTables grants, its owner's
// MANAGE_GRANTS, inherited tags), so only a principal that could already
// read and share the object (SELECT and MANAGE_GRANTS) may make it.
func (h *Handler) authorizeRename(r *http.Request, wh string, from, to catalog.Ident, kind catalog.Kind) error {
	create := authz.CreateTable
	if kind == catalog.KindView {
		create = authz.CreateView
	}
	src := securable(wh, from, kind)
	if err := h.require(r, authz.Drop, src); err != nil {
		return err
	}
	if err := h.require(r, create, authz.NamespaceOf(wh, to.Namespace)); err != nil {
		return err
	}
	if from.Namespace.Key() != to.Namespace.Key() {
		if err := h.require(r, authz.Select, src); err != nil {
			return err
		}
		if err := h.require(r, authz.ManageGrants, src); err != nil {
			return err
		}
	}
	return nil
}

// renamed moves the grants after a rename: the object keeps its grants
// and tags under its new name (see docs/authorization.md, "Renames"); the
// renamer gains nothing, except the owner's privileges after a move
// across namespaces, which it could already grant itself.
func (h *Handler) renamed(r *http.Request, wh string, from, to catalog.Ident, kind catalog.Kind) {
	dst := securable(wh, to, kind)
	h.moved(r, securable(wh, from, kind), dst)
	if from.Namespace.Key() != to.Namespace.Key() {
		h.owned(r, dst)
	}
}

func (h *Handler) renameTable(w http.ResponseWriter, r *http.Request) error {
	return h.rename(w, r, catalog.KindTable)
}

func (h *Handler) renameView(w http.ResponseWriter, r *http.Request) error {
	return h.rename(w, r, catalog.KindView)
}

// isCreate reports whether a commit creates its table (a staged create's
// assert-create requirement).
func isCreate(tc catalog.TableCommit) bool {
	for _, req := range tc.Requirements {
		if req.GetType() == "assert-create" {
			return true
		}
	}
	return false
}

// The privilege decisions of the table writes, shared by local warehouses
// and foreign catalogs whose writes are forwarded.

// authorizeCreateTable: CREATE_TABLE on the namespace.
func (h *Handler) authorizeCreateTable(r *http.Request, wh string, ns catalog.Namespace) error {
	return h.require(r, authz.CreateTable, authz.NamespaceOf(wh, ns))
}

// authorizeDropTable: DROP on the table.
func (h *Handler) authorizeDropTable(r *http.Request, wh string, id catalog.Ident) error {
	return h.require(r, authz.Drop, authz.Table(wh, id))
}

// authorizeRegister: CREATE_TABLE on the namespace, and MODIFY on the
// table to overwrite it (replacing a table's metadata changes its data).
func (h *Handler) authorizeRegister(r *http.Request, wh string, id catalog.Ident, overwrite bool) error {
	if err := h.authorizeCreateTable(r, wh, id.Namespace); err != nil {
		return err
	}
	if overwrite {
		return h.require(r, authz.Modify, authz.Table(wh, id))
	}
	return nil
}

// requireCommit checks a commit: CREATE_TABLE on the namespace for one that
// creates its table, MODIFY on the table otherwise.
func (h *Handler) requireCommit(r *http.Request, wh string, tc catalog.TableCommit) error {
	if isCreate(tc) {
		return h.require(r, authz.CreateTable, authz.NamespaceOf(wh, tc.Ident.Namespace))
	}
	return h.require(r, authz.Modify, authz.Table(wh, tc.Ident))
}

// ownCreated grants the caller the owner's privileges on a table its
// commit created.
func (h *Handler) ownCreated(r *http.Request, wh string, tc catalog.TableCommit) {
	if isCreate(tc) {
		h.owned(r, authz.Table(wh, tc.Ident))
	}
}

// transactionCommits parses a commitTransaction's table changes; each
// must name its table.
func transactionCommits(req commitTransactionRequest) ([]catalog.TableCommit, error) {
	commits := make([]catalog.TableCommit, 0, len(req.TableChanges))
	for i, raw := range req.TableChanges {
		tc, err := parseCommit(raw)
		if err != nil {
			return nil, floe.Wrap(floe.Invalid, err, "table-changes[%d]: %s", i, floe.PublicMessage(err))
		}
		if tc.Identifier == nil {
			return nil, floe.E(floe.Invalid, "", "table-changes[%d]: identifier is required in a transaction", i)
		}
		id, err := tc.Identifier.ident()
		if err != nil {
			return nil, err
		}
		commits = append(commits, catalog.TableCommit{Ident: id, Requirements: tc.Requirements, Updates: tc.Updates})
	}
	return commits, nil
}
