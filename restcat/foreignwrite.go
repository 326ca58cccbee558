package restcat

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// ForeignWriter is a Foreign that can forward writes to the remote
// catalog with a write identity of its own, separate from the identity
// its reads use (the foreign catalog's writes setting). Floe checks the
// caller's privileges on the foreign securables first, exactly as for a
// local warehouse; the remote then judges the write identity.
type ForeignWriter interface {
	// Writable reports whether writes are forwarded (off: every write is
	// refused, as for a Foreign that is no ForeignWriter).
	Writable() bool
	// Write forwards one write with the write identity and returns the
	// remote's 2xx answer body (empty for 204). Errors keep the remote's
	// meaning (NotFound, AlreadyExists, Conflict, Indeterminate, ...) and
	// name the foreign catalog.
	Write(ctx context.Context, w ForeignWrite) ([]byte, error)
	// LoadTableForWrite loads a table with the credentials the remote
	// vends to the write identity: only for a caller who may write the
	// table's files in Floe.
	LoadTableForWrite(ctx context.Context, ns []string, name string) (*ForeignTable, error)
}

// ForeignWrite is one write to forward: the spec operation, its path below
// the remote's prefix (escaped, as the spec spells it) and the caller's
// body, unchanged.
type ForeignWrite struct {
	// Operation is the spec operation (createTable, commitTable, ...).
	Operation string
	// Method is POST or DELETE.
	Method string
	// Path is the escaped path below /v1/{prefix}/.
	Path string
	// Query is the query string to pass (dropTable's purgeRequested).
	Query url.Values
	// Body is the caller's body (nil: none).
	Body []byte
	// Delegate asks the remote for vended credentials with its answer.
	Delegate bool
	// Commit marks a commit: an answer lost after sending is Indeterminate.
	Commit bool
	// Entity and Object name what a 404 is about.
	Entity, Object string
	// Touched are the namespaces (Name "") and tables the write may
	// change: their cached remote answers are dropped.
	Touched []catalog.Ident
}

// forwarded are the writes a foreign catalog forwards when its writes are
// on; every other write (views, unregister) and remote signing is refused.
var forwarded = map[string]bool{
	"createNamespace": true, "dropNamespace": true, "updateNamespaceProperties": true,
	"createTable": true, "registerTable": true, "commitTable": true, "dropTable": true,
	"renameTable": true, "commitTransaction": true,
}

// foreignWriter returns f as a ForeignWriter whose writes are on, or nil.
func foreignWriter(f Foreign) ForeignWriter {
	if fw, ok := f.(ForeignWriter); ok && fw.Writable() {
		return fw
	}
	return nil
}

// writeEndpoints lists the writes a foreign catalog forwards, in
// /v1/config form.
func (h *Handler) writeEndpoints() []string {
	var out []string
	for _, rt := range h.table() {
		if forwarded[rt.name] {
			out = append(out, rt.method+" "+rt.path)
		}
	}
	return out
}

// nsRemotePath is the escaped remote path of namespace ns, then rest.
func nsRemotePath(ns []string, rest ...string) string {
	p := "namespaces/" + url.PathEscape(strings.Join(ns, "\x1f"))
	for _, s := range rest {
		p += "/" + s
	}
	return p
}

// tableRemotePath is the escaped remote path of table id.
func tableRemotePath(id catalog.Ident) string {
	return nsRemotePath(id.Namespace, "tables", url.PathEscape(id.Name))
}

// readForwarded reads the caller's body (bounded by MaxBodyBytes, as for a
// local write), checks its required fields and decodes it into v, and
// returns the bytes to forward unchanged.
func readForwarded(r *http.Request, v any, required ...string) ([]byte, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if err := requireFields(body, required...); err != nil {
		return nil, err
	}
	if err := decodeBytes(body, v); err != nil {
		return nil, err
	}
	return body, nil
}

// forwardWrite serves a write on a foreign catalog whose writes are on:
// it checks the caller's privileges with the local warehouse's rules (the
// remote is not called on a denial), forwards the caller's body to the
// remote with the write identity, passes the remote's answer back and
// keeps Floe's grants in step (the creator owns what it created, a drop
// removes the grants, a rename moves them).
func (h *Handler) forwardWrite(w http.ResponseWriter, r *http.Request, rt route, fw ForeignWriter) error {
	wh := r.PathValue("prefix")
	ctx := r.Context()
	fwd := ForeignWrite{Operation: rt.name, Method: rt.method}
	var after func() // grants kept in step once the remote accepted the write
	switch rt.name {
	case "createNamespace":
		var req createNamespaceRequest
		body, err := readForwarded(r, &req, "namespace")
		if err != nil {
			return err
		}
		ns := catalog.Namespace(req.Namespace)
		if err := ns.Validate(); err != nil {
			return err
		}
		if err := h.authorizeCreateNamespace(r, wh, ns); err != nil {
			return err
		}
		fwd.Path, fwd.Body, fwd.Entity, fwd.Object = "namespaces", body, "namespace", "namespace "+strings.Join(ns, ".")
		fwd.Touched = []catalog.Ident{{Namespace: ns}}
		after = func() { h.owned(r, authz.NamespaceOf(wh, ns)) }
	case "dropNamespace", "updateNamespaceProperties":
		ns, err := namespaceParam(r)
		if err != nil {
			return err
		}
		fwd.Entity, fwd.Object, fwd.Touched = "namespace", "namespace "+strings.Join(ns, "."), []catalog.Ident{{Namespace: ns}}
		if rt.name == "dropNamespace" {
			if err := h.authorizeDropNamespace(r, wh, ns); err != nil {
				return err
			}
			fwd.Path = nsRemotePath(ns)
			after = func() { h.dropped(r, authz.NamespaceOf(wh, ns)) }
			break
		}
		if err := h.authorizeUpdateNamespace(r, wh, ns); err != nil {
			return err
		}
		var req updatePropertiesRequest
		if fwd.Body, err = readForwarded(r, &req); err != nil {
			return err
		}
		fwd.Path = nsRemotePath(ns, "properties")
	case "createTable", "registerTable":
		ns, err := namespaceParam(r)
		if err != nil {
			return err
		}
		var id catalog.Ident
		own := true // the creator owns the table; a staged create when committed, an overwrite never
		if rt.name == "createTable" {
			var req createTableRequest
			if fwd.Body, err = readForwarded(r, &req, "name", "schema"); err != nil {
				return err
			}
			id, own = catalog.Ident{Namespace: ns, Name: req.Name}, !req.StageCreate
			if err := id.Validate(); err != nil {
				return err
			}
			if err := h.authorizeCreateTable(r, wh, ns); err != nil {
				return err
			}
			fwd.Path = nsRemotePath(ns, "tables")
		} else {
			var req registerRequest
			if fwd.Body, err = readForwarded(r, &req, "name", "metadata-location"); err != nil {
				return err
			}
			id, own = catalog.Ident{Namespace: ns, Name: req.Name}, !req.Overwrite
			if err := id.Validate(); err != nil {
				return err
			}
			if err := h.authorizeRegister(r, wh, id, req.Overwrite); err != nil {
				return err
			}
			fwd.Path = nsRemotePath(ns, "register")
		}
		fwd.Delegate, fwd.Entity, fwd.Object = true, "namespace", "namespace "+strings.Join(ns, ".")
		fwd.Touched = []catalog.Ident{id}
		body, err := h.forward(ctx, fw, fwd)
		if err != nil {
			return err
		}
		if own {
			h.owned(r, authz.Table(wh, id))
		}
		return h.writtenTable(w, r, wh, id, body)
	case "commitTable":
		id, err := identParam(r, "table")
		if err != nil {
			return err
		}
		tc, body, err := readTableCommit(r, id)
		if err != nil {
			return err
		}
		if err := h.requireCommit(r, wh, tc); err != nil {
			return err
		}
		fwd.Path, fwd.Body, fwd.Commit, fwd.Entity, fwd.Object = tableRemotePath(id), body, true, "table", "table "+id.String()
		fwd.Touched = []catalog.Ident{id}
		after = func() { h.ownCreated(r, wh, tc) }
	case "dropTable":
		id, err := identParam(r, "table")
		if err != nil {
			return err
		}
		if s := r.URL.Query().Get("purgeRequested"); s != "" {
			purge, err := strconv.ParseBool(s)
			if err != nil {
				return floe.E(floe.Invalid, "", "purgeRequested must be true or false")
			}
			fwd.Query = url.Values{"purgeRequested": {strconv.FormatBool(purge)}}
		}
		if err := h.authorizeDropTable(r, wh, id); err != nil {
			return err
		}
		fwd.Path, fwd.Entity, fwd.Object, fwd.Touched = tableRemotePath(id), "table", "table "+id.String(), []catalog.Ident{id}
		after = func() { h.dropped(r, authz.Table(wh, id)) }
	case "renameTable":
		var req renameRequest
		body, err := readForwarded(r, &req, "source", "destination")
		if err != nil {
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
		if err := h.authorizeRename(r, wh, from, to, catalog.KindTable); err != nil {
			return err
		}
		fwd.Path, fwd.Body, fwd.Entity, fwd.Object = "tables/rename", body, "table", "table "+from.String()
		fwd.Touched = []catalog.Ident{from, to}
		after = func() { h.renamed(r, wh, from, to, catalog.KindTable) }
	case "commitTransaction":
		// Every table of a transaction is in this foreign catalog: the
		// identifiers are relative to the request's prefix.
		var req commitTransactionRequest
		body, err := readForwarded(r, &req, "table-changes")
		if err != nil {
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
			fwd.Touched = append(fwd.Touched, tc.Ident)
		}
		fwd.Path, fwd.Body, fwd.Commit, fwd.Entity = "transactions/commit", body, true, "table"
		after = func() {
			for _, tc := range commits {
				h.ownCreated(r, wh, tc)
			}
		}
	default:
		return floe.E(floe.Forbidden, "", "%s is a foreign catalog: Floe forwards namespace and table writes to it, not %s", wh, rt.name)
	}
	body, err := h.forward(ctx, fw, fwd)
	if err != nil {
		return err
	}
	if after != nil {
		after()
	}
	switch rt.name {
	case "createNamespace", "updateNamespaceProperties", "commitTable":
		if !isJSONObject(body) {
			return floe.E(floe.Unavailable, "", "foreign catalog %s answered %s with a body that is not a JSON object", wh, rt.name)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
	return nil
}

// forward sends fwd through the writer, recording what was forwarded for
// the request's audit event.
func (h *Handler) forward(ctx context.Context, fw ForeignWriter, fwd ForeignWrite) ([]byte, error) {
	body, err := fw.Write(ctx, fwd)
	if c, ok := ctx.Value(callerKey{}).(*caller); ok && c != nil {
		c.setDetail("forwarded", true)
	}
	return body, err
}

// writtenTable answers a forwarded createTable or registerTable with the
// remote's LoadTableResult, passing the write identity's credentials only
// to a caller who may now write the table's files in Floe.
func (h *Handler) writtenTable(w http.ResponseWriter, r *http.Request, wh string, id catalog.Ident, body []byte) error {
	var lr struct {
		MetadataLocation   string              `json:"metadata-location"`
		Metadata           json.RawMessage     `json:"metadata"`
		Config             map[string]string   `json:"config"`
		StorageCredentials []ForeignCredential `json:"storage-credentials"`
	}
	if err := json.Unmarshal(body, &lr); err != nil || !isJSONObject(lr.Metadata) {
		return floe.E(floe.Unavailable, "", "foreign catalog %s answered with a malformed LoadTableResult", wh)
	}
	write, denied := h.fileAccess(r, wh, id)
	t := &ForeignTable{MetadataLocation: lr.MetadataLocation, Metadata: lr.Metadata, Config: lr.Config, StorageCredentials: lr.StorageCredentials}
	note := ""
	switch {
	case denied != nil:
		note = "none: reading this table's files needs SELECT on it in Floe (without a data filter)"
	case !write:
		note = "none: the table was written with Floe's write identity; load it to read its files"
	}
	if note == "" {
		h.auditPassthrough(r, wh, id, foreignCredentials(t), "write")
	}
	writeForeignTable(w, wh, t, note == "", note)
	return nil
}

// writeForeignTable sends a foreign table's LoadTableResult: with the
// remote's credentials when creds, else without them and with note (or
// the default) in config's floe.credentials.
func writeForeignTable(w http.ResponseWriter, wh string, t *ForeignTable, creds bool, note string) {
	cfg := map[string]string{}
	var sc []ForeignCredential
	if creds {
		for k, v := range t.Config {
			if k != "token" && k != "credential" { // the remote's hand-back of Floe's own identity
				cfg[k] = v
			}
		}
		sc = t.StorageCredentials
		w.Header().Set("Cache-Control", "no-store")
	}
	if len(foreignCredentials(&ForeignTable{Config: cfg, StorageCredentials: sc})) == 0 {
		switch {
		case creds:
			cfg[ConfigNoCredentials] = "none: foreign catalog " + wh + " vended no storage credentials for this table"
		case note != "":
			cfg[ConfigNoCredentials] = note
		default:
			cfg[ConfigNoCredentials] = "none: reading this table's files needs SELECT on it in Floe (without a data filter)"
		}
	}
	body := map[string]any{"metadata": t.Metadata, "config": cfg}
	if t.MetadataLocation != "" {
		body["metadata-location"] = t.MetadataLocation
	}
	if len(sc) > 0 {
		body["storage-credentials"] = sc
	}
	writeJSON(w, http.StatusOK, body)
}

// isJSONObject reports whether b is a JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) >= 2 && b[0] == '{' && json.Valid(b)
}
