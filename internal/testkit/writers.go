package testkit

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
)

// SnapshotJSON renders a minimal snapshot for add-snapshot updates with
// the manifest list at list: the catalog reads it, so it must exist inside
// the table's location (EmptyManifestList writes one).
func SnapshotJSON(list string, id int64, parent *int64, seq int64) string {
	p := ""
	if parent != nil {
		p = fmt.Sprintf(`"parent-snapshot-id":%d,`, *parent)
	}
	return fmt.Sprintf(`{"snapshot-id":%d,%s"sequence-number":%d,"timestamp-ms":%d,"manifest-list":%q,"summary":{"operation":"append"},"schema-id":0}`,
		id, p, seq, time.Now().UnixMilli(), list)
}

// EmptyList stands for the manifest list in the snapshots given to
// CreateWithUpdates: it becomes an empty manifest list inside the new
// table's location.
const EmptyList = "floe-test:empty-manifest-list"

// EmptyManifestList writes an empty manifest list inside the table
// location loc (once) and returns its location.
func (f *Floe) EmptyManifestList(t testing.TB, loc string) string {
	t.Helper()
	if f.App.Objects() == nil {
		t.Fatal("EmptyManifestList needs the embedded object store")
	}
	list := strings.TrimSuffix(loc, "/") + "/metadata/snap-empty-test.avro"
	var buf bytes.Buffer
	seq := int64(0)
	if err := iceberg.WriteManifestList(2, &buf, 1, nil, &seq, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.App.Objects().FileIO().WriteFile(context.Background(), list, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	return list
}

// TableLocation returns the location of the table at path (relative to
// the warehouse prefix), loaded with the admin token.
func (f *Floe) TableLocation(t testing.TB, path string) string {
	t.Helper()
	r := f.Do(t, "GET", f.P(path+"?snapshots=refs"), nil)
	if r.Status != 200 {
		t.Fatalf("load %s: %d %s", path, r.Status, r.Body)
	}
	var out struct {
		Metadata struct {
			Location string `json:"location"`
		} `json:"metadata"`
	}
	r.JSON(t, &out)
	return out.Metadata.Location
}

// WriterResult is what one concurrent writer saw.
type WriterResult struct {
	Applied  []int64 // snapshot ids whose commit answered 200
	Rejected int     // commits answered 409
}

// RunWriter makes n commit attempts on the table at path (relative to the
// warehouse prefix). Each attempt adds a snapshot on top of the writer's view
// of main and asserts main has not moved; after a 409 the writer refreshes
// its view. Snapshot ids are writer*1e6+i+1, so writers never collide.
func (f *Floe) RunWriter(t testing.TB, tok, path string, writer, n int) WriterResult {
	var res WriterResult
	list := f.EmptyManifestList(t, f.TableLocation(t, path))
	cur, seqNo := f.RefsState(t, tok, path)
	for i := 0; i < n; i++ {
		id := int64(writer)*1_000_000 + int64(i) + 1
		var parent *int64
		req := `{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null}`
		if cur != 0 {
			parent = &cur
			req = fmt.Sprintf(`{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":%d}`, cur)
		}
		body := fmt.Sprintf(`{"requirements":[%s],"updates":[{"action":"add-snapshot","snapshot":%s},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":%d}]}`,
			req, SnapshotJSON(list, id, parent, seqNo+1), id)
		r := f.DoAs(t, tok, "POST", f.P(path), body)
		switch r.Status {
		case 200:
			res.Applied = append(res.Applied, id)
			cur, seqNo = id, seqNo+1
		case 409:
			res.Rejected++
			cur, seqNo = f.RefsState(t, tok, path)
		default:
			t.Errorf("writer %d commit %d: status %d: %s", writer, i, r.Status, r.Body)
			return res
		}
	}
	return res
}

// RefsState loads only the referenced snapshots (cheap) and returns main's
// snapshot id (0 if none) and the table's last sequence number.
func (f *Floe) RefsState(t testing.TB, tok, path string) (int64, int64) {
	r := f.DoAs(t, tok, "GET", f.P(path+"?snapshots=refs"), nil)
	if r.Status != 200 {
		t.Errorf("load %s: %d", path, r.Status)
		return 0, 0
	}
	var out struct {
		Metadata struct {
			Current *int64 `json:"current-snapshot-id"`
			LastSeq int64  `json:"last-sequence-number"`
		} `json:"metadata"`
	}
	r.JSON(t, &out)
	if out.Metadata.Current == nil || *out.Metadata.Current < 0 {
		return 0, out.Metadata.LastSeq
	}
	return *out.Metadata.Current, out.Metadata.LastSeq
}

// SkipValidation turns off spec validation for load tests: validating
// thousands of ever-larger commit responses would dominate their run time,
// and the functional tests validate the same responses.
func (f *Floe) SkipValidation() {
	f.Transport.Skip = func(*http.Request) bool { return true }
}

// SnapshotAt renders a snapshot like SnapshotJSON with a chosen timestamp
// (its sequence number is its id).
func SnapshotAt(list string, id, parent int64, ts time.Time) string {
	p := ""
	if parent != 0 {
		p = fmt.Sprintf(`"parent-snapshot-id":%d,`, parent)
	}
	return fmt.Sprintf(`{"snapshot-id":%d,%s"sequence-number":%d,"timestamp-ms":%d,"manifest-list":%q,"summary":{"operation":"append"},"schema-id":0}`,
		id, p, id, ts.UnixMilli(), list)
}

// CreateWithUpdates creates ns (if missing) and then table ns.name in one
// create transaction: a stage-create, then a commit asserting create with the
// updates that initialise the staged metadata followed by extra. The metadata
// builder refuses a snapshot more than a minute older than the table's last
// update, so this is how a test writes old history: into a new table, oldest
// snapshot first. EmptyList in extra becomes an empty manifest list inside
// the table's location.
func (f *Floe) CreateWithUpdates(t testing.TB, ns, name, schema string, extra ...string) {
	t.Helper()
	if r := f.Do(t, "POST", f.P("/namespaces"), fmt.Sprintf(`{"namespace":[%q]}`, ns)); r.Status != 200 && r.Status != 409 {
		t.Fatalf("create namespace: %d %s", r.Status, r.Body)
	}
	r := f.Do(t, "POST", f.P("/namespaces/"+ns+"/tables"), fmt.Sprintf(`{"name":%q,"schema":%s,"stage-create":true}`, name, schema))
	if r.Status != 200 {
		t.Fatalf("stage create: %d %s", r.Status, r.Body)
	}
	var staged struct {
		Metadata struct {
			UUID     string `json:"table-uuid"`
			Location string `json:"location"`
		} `json:"metadata"`
	}
	r.JSON(t, &staged)
	quoted := fmt.Sprintf("%q", EmptyList)
	for i, u := range extra {
		if strings.Contains(u, quoted) {
			extra[i] = strings.ReplaceAll(u, quoted, fmt.Sprintf("%q", f.EmptyManifestList(t, staged.Metadata.Location)))
		}
	}
	updates := append([]string{
		fmt.Sprintf(`{"action":"assign-uuid","uuid":%q}`, staged.Metadata.UUID),
		`{"action":"upgrade-format-version","format-version":2}`,
		`{"action":"add-schema","schema":` + schema + `}`, `{"action":"set-current-schema","schema-id":-1}`,
		`{"action":"add-spec","spec":{"spec-id":0,"fields":[]}}`, `{"action":"set-default-spec","spec-id":-1}`,
		`{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}}`, `{"action":"set-default-sort-order","sort-order-id":-1}`,
		fmt.Sprintf(`{"action":"set-location","location":%q}`, staged.Metadata.Location),
	}, extra...)
	body := `{"requirements":[{"type":"assert-create"}],"updates":[` + strings.Join(updates, ",") + `]}`
	if r := f.Do(t, "POST", f.P("/namespaces/"+ns+"/tables/"+name), body); r.Status != 200 {
		t.Fatalf("create %s.%s: %d %s", ns, name, r.Status, r.Body)
	}
}
