package restcat

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake/rowproof"
	"github.com/floe-lake/floe/objstore"
	"github.com/floe-lake/floe/vend"
)

// Policy-filtered plans. A caller whose SELECT on a table carries a row
// filter (and no column restriction) may plan a scan when Floe can decide
// its filter on each planned file from the file's metadata (package
// lake/rowproof): the plan lists only the files whose rows all pass, with
// their delete files, and leaves out those whose rows all fail; one file
// whose rows may partly fail refuses the whole plan, pointing to the SQL
// endpoint. The credential that comes with such a plan reads exactly the
// planned files (vend.ReadFiles): no other file of the table, no manifest,
// no metadata file.

// planPolicy is the row policy a filtered caller's plan enforces.
type planPolicy struct {
	filter *rowproof.Filter
	// canon identifies the policy in plan keys: plans of different
	// policies never share a result, and a plan id planned under a policy
	// serves no page once the caller's policy has changed.
	canon string
	// refuse builds the refusal of the plan, with why and where to read.
	refuse func(why string) error
}

// key is the policy's part of a plan key ("" without a policy).
func (p *planPolicy) key() string {
	if p == nil {
		return ""
	}
	return p.canon
}

// planDenied is the refusal of a plan to a caller that may read the
// table's files only through a data filter: loadTable's reason, why this
// plan cannot be filtered (if why is set), and where to read the table.
func (h *Handler) planDenied(r *http.Request, wh string, id catalog.Ident, denied error, why string) error {
	reason := floe.PublicMessage(denied)
	if why != "" {
		reason += "; " + why
	}
	if v := h.opts.Vending; v != nil && v.SQLAddress != "" && h.filtered(r, wh, id) {
		reason += ". Read it through Floe's SQL endpoint at " + v.SQLAddress + " (PostgreSQL wire protocol, database " +
			strconv.Quote(wh) + ", user " + strconv.Quote(callerName(r)) + ", an access token as the password)"
	}
	return floe.Wrap(floe.Forbidden, denied, "%s", reason)
}

// planPolicy returns the row policy a plan of table st enforces for the
// caller: nil when it may read whole files (filtered is false, as
// planReadable said), else its row filters compiled for per-file proofs.
// Column restrictions, and row filters outside what can be decided per
// file, refuse the plan as planReadable refuses it.
func (h *Handler) planPolicy(r *http.Request, wh string, id catalog.Ident, st *catalog.TableState, filtered bool) (*planPolicy, error) {
	if !filtered {
		return nil, nil
	}
	_, denied := h.fileAccess(r, wh, id)
	if denied == nil {
		return nil, nil // the grants changed since planReadable: whole files
	}
	refuse := func(why string) error { return h.planDenied(r, wh, id, denied, why) }
	filters, err := h.boundFilters(r, wh, id, st)
	if err != nil {
		return nil, err
	}
	if len(filters) == 0 {
		return nil, refuse("")
	}
	schema := st.Metadata.CurrentSchema()
	var parts []*rowproof.Filter
	for i := range filters {
		f := &filters[i]
		if f.Include != nil || len(f.Exclude) > 0 {
			return nil, refuse("its grant " + f.Describe + " restricts columns, which a plan of whole files cannot")
		}
		c, err := rowproof.Compile([]string{f.RowFilter}, func(ref string) (rowproof.Column, bool) {
			fid, ok := f.RowColumn(ref)
			if !ok {
				return rowproof.Column{}, false
			}
			field, ok := schema.FindFieldByID(fid)
			return rowproof.Column{ID: fid, Type: field.Type}, ok
		})
		if err != nil {
			return nil, refuse(floe.PublicMessage(err))
		}
		parts = append(parts, c)
	}
	pf := rowproof.Or(parts...)
	return &planPolicy{filter: pf, canon: pf.String(), refuse: refuse}, nil
}

// binder stores column bindings (*authz.Authorizer).
type binder interface {
	Bind(ctx context.Context, bs []authz.ColumnBinding) error
}

// boundFilters returns the caller's data filters on the table by field id,
// storing the column bindings this read makes first (as the SQL endpoint
// does), so that both read the filter with the same columns.
func (h *Handler) boundFilters(r *http.Request, wh string, id catalog.Ident, st *catalog.TableState) ([]authz.BoundFilter, error) {
	c, err := h.caller(r)
	if err != nil {
		return nil, err
	}
	tc := authz.ColumnsOf(st.Metadata)
	for attempt := 0; ; attempt++ {
		b, err := c.pol.BindFilters(c.sub, authz.Table(wh, id), tc)
		if err != nil {
			return nil, err
		}
		bd, ok := h.opts.Authz.(binder)
		if len(b.New) == 0 || attempt > 0 || !ok {
			return b.Filters, nil
		}
		if err := bd.Bind(r.Context(), b.New); err != nil {
			return nil, floe.Wrap(floe.Unavailable, err, "cannot store the column bindings of a data filter")
		}
		pol, err := h.opts.Authz.Policy(r.Context())
		if err != nil {
			return nil, floe.Wrap(floe.Unavailable, err, "authorization policy unavailable")
		}
		c.pol = pol
	}
}

// apply keeps the tasks whose rows all pass the policy and counts the data
// files left out; a file it cannot decide refuses the plan. The delete
// files of a kept task are checked too, as they are handed out with it: a
// delete file that names one data file (referenced-data-file: deletion
// vectors, file-scoped position deletes) goes with that file; any other
// must itself be proven to hold only rows the filter admits (by its
// partition values: position deletes share their data files' partition;
// or by its statistics), else the plan is refused: an equality delete file
// holds the deleted rows' values, and a partition-wide position delete
// file may name other partitions' files.
func (p *planPolicy) apply(md table.Metadata, tasks []table.FileScanTask) ([]table.FileScanTask, int, error) {
	specs := map[int32]*iceberg.PartitionSpec{}
	spec := func(f iceberg.DataFile) *iceberg.PartitionSpec {
		id := f.SpecID()
		s, ok := specs[id]
		if !ok {
			s = md.PartitionSpecByID(int(id))
			specs[id] = s
		}
		return s
	}
	kept := tasks[:0:0]
	withheld := 0
	deletes := map[string]bool{} // delete files already proven
	for _, t := range tasks {
		switch p.filter.Decide(t.File, spec(t.File)) {
		case rowproof.All:
		case rowproof.None:
			withheld++
			continue
		default:
			return nil, 0, p.refuse("its row filter cannot be decided on every file of the scan from partition values or exact " +
				"statistics (some files may hold rows that pass and rows that do not)")
		}
		for _, list := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, d := range list {
				if ref := d.ReferencedDataFile(); ref != nil && *ref == t.File.FilePath() {
					continue
				}
				if deletes[d.FilePath()] {
					continue
				}
				if p.filter.Decide(d, spec(d)) != rowproof.All {
					return nil, 0, p.refuse("a delete file that applies to the rows it admits may also hold other rows' values or " +
						"name other files, as its partition values and statistics cannot rule out")
				}
				deletes[d.FilePath()] = true
			}
		}
		kept = append(kept, t)
	}
	return kept, withheld, nil
}

// policyFiles lists the files of a filtered plan's tasks: data files and the
// delete files they reference, each once.
func policyFiles(tasks []table.FileScanTask) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, t := range tasks {
		add(t.File.FilePath())
		for _, list := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, d := range list {
				add(d.FilePath())
			}
		}
	}
	slices.Sort(out)
	return out
}

// planFileCredentials returns a credential that reads exactly the files of
// a filtered plan (minted for this answer, never reused: it is the plan's
// own), or a refusal when it cannot be made: too many files for one
// credential, or files outside the table's location.
func (h *Handler) planFileCredentials(r *http.Request, id catalog.Ident, st *catalog.TableState, res *planResult, pol *planPolicy) ([]storageCredential, error) {
	v := h.opts.Vending
	bucket, prefix, ok := objstore.LocationPrefix(st.Metadata.Location())
	if !ok || len(res.files) == 0 {
		return nil, nil
	}
	if len(res.files) > vend.MaxFiles {
		return nil, pol.refuse("the plan lists " + strconv.Itoa(len(res.files)) + " files, more than the " +
			strconv.Itoa(vend.MaxFiles) + " one credential can name: narrow the scan with a filter")
	}
	keys := make([]string, 0, len(res.files))
	for _, f := range res.files {
		b, key, err := objstore.ParseLocation(f)
		if err != nil || b != bucket || !strings.HasPrefix(key, prefix) {
			return nil, pol.refuse("the plan lists a file outside the table's location, which a per-file credential cannot name")
		}
		keys = append(keys, key)
	}
	s := session(r.Context(), id, bucket, prefix, false)
	s.Grants[0].Access, s.Files = vend.ReadFiles, keys
	creds, sess, err := v.Minter.Mint(r.Context(), s, v.TTL)
	if err != nil {
		if k := floe.KindOf(err); k == floe.Invalid || k == floe.Unsupported {
			return nil, pol.refuse(floe.PublicMessage(err))
		}
		return nil, floe.Wrap(floe.Unavailable, err, "cannot vend storage credentials for %s", id)
	}
	v.audit(r.Context(), sess)
	v.observe(s, false)
	if c, ok := r.Context().Value(callerKey{}).(*caller); ok && c != nil {
		c.credentialID = sess.ID
	}
	sc := v.clientConfig()
	for k, val := range credentialConfig(creds) {
		sc[k] = val
	}
	return []storageCredential{{Prefix: "s3://" + bucket + "/" + prefix, Config: sc}}, nil
}

// signSet is the files a filtered principal's plans of one table listed,
// under the policy they were planned with.
type signSet struct {
	canon string
	files map[string]struct{}
	size  int64
}

// allowSigning records the files of a policy-filtered plan made for remote
// signing: with the files of the principal's earlier plans of the table
// under the same policy, for as long as a plan id lives.
func (p *planner) allowSigning(principal, tableUUID, canon string, files []string) {
	k := principal + "\x00" + tableUUID
	next := &signSet{canon: canon, files: map[string]struct{}{}, size: 64}
	if old, ok := p.signable.Get(k); ok && old.canon == canon {
		for f := range old.files {
			next.files[f] = struct{}{}
		}
		next.size = old.size
	}
	for _, f := range files {
		if _, ok := next.files[f]; !ok {
			next.files[f] = struct{}{}
			next.size += int64(len(f)) + 16
		}
	}
	p.signable.Add(k, next, next.size)
}

// planSignable allows a filtered caller's sign request (denied is why it
// may not read the table's files) only for a GET or HEAD of one object that
// one of its live policy-filtered plans of the table listed, under the
// policy it holds now; anything else is refused with denied.
func (h *Handler) planSignable(r *http.Request, wh string, id catalog.Ident, st *catalog.TableState, t *signTarget, denied error) error {
	refuse := func() error {
		return floe.Wrap(floe.Forbidden, denied, "%s; its requests are signed only for reads of the files of its scan plans "+
			"(plan with X-Iceberg-Access-Delegation: remote-signing)", floe.PublicMessage(denied))
	}
	if h.plans == nil || (t.method != http.MethodGet && t.method != http.MethodHead) || t.key == "" || t.list != nil ||
		len(t.keys) > 0 || t.copySource != "" {
		return refuse()
	}
	set, ok := h.plans.signable.Get(planPrincipal(r) + "\x00" + st.Metadata.TableUUID().String())
	if !ok {
		return refuse()
	}
	if _, listed := set.files["s3://"+t.bucket+"/"+t.key]; !listed {
		return refuse()
	}
	pol, err := h.planPolicy(r, wh, id, st, true)
	if err != nil || pol.key() != set.canon {
		return refuse()
	}
	return nil
}
