// Package subset derives, from a table's current snapshot, a snapshot that
// holds only the files a reader may see, and answers which object keys such
// a derived snapshot names.
//
// A share catalog hands a recipient a table without its history, or only
// the partitions a share's filter allows. Handing out the table's own
// metadata and manifests would tell the recipient the keys of files it may
// not read: older snapshots' manifest lists, files a DELETE removed (kept in
// manifests as deleted entries), files outside the filter. So the share
// catalog writes a derived view instead, in a directory of its own inside
// the table's metadata directory:
//
//	<table location>/metadata/floe-share-<snapshot id>-<hash>/
//	    list.avro                 the manifest list
//	    m<content>-<spec>.avro    one manifest per content and partition spec
//	    <hash>.metadata.json      the metadata served (one per metadata version)
//
// It holds the live entries the caller keeps, with their snapshot ids and
// sequence numbers, under the real snapshot's id. A credential for the view
// reads the directory's objects and the files its manifests name, nothing
// else (vend.ReadListed; Keys answers the S3 endpoint's question).
//
// Views are deterministic: two nodes deriving the same view write the same
// names. Orphan-file removal keeps the directories of live snapshots (Live)
// and removes the others like any unreferenced file.
package subset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// DirPrefix starts the name of every view directory.
const DirPrefix = "floe-share-"

// ListName is the manifest list's name inside a view directory.
const ListName = "list.avro"

// FS is what views are read from and written to.
type FS interface {
	icebergio.IO
	ReadFile(name string) ([]byte, error)
	WriteFile(name string, p []byte) error
}

// Keep decides one live file (data or delete) of the snapshot: keep it in
// the view, leave it out, or refuse the whole view with an error that says
// why (wrapped floe error kinds pass through).
type Keep func(df iceberg.DataFile) (bool, error)

// View is a derived snapshot.
type View struct {
	// Dir is the view directory's location, ending in "/".
	Dir string
	// MetadataLocation is the served metadata file's location.
	MetadataLocation string
	// Metadata is the served metadata JSON.
	Metadata []byte
	// Files and Bytes count the live files kept (data and delete).
	Files, Bytes int64
}

// Request says what view to derive.
type Request struct {
	// Metadata is the table's metadata; MetadataLocation its file.
	Metadata         table.Metadata
	MetadataLocation string
	// Trimmed is the metadata JSON with only the current snapshot (the
	// share catalog's trimHistory): the view's metadata is derived from it.
	Trimmed []byte
	// Filter names what Keep keeps ("" keeps every live file): part of
	// the view's name, so that views of different filters never mix.
	Filter string
	// Keep decides each live file (nil keeps all).
	Keep Keep
	// Filtered says the view may leave files out: the snapshot's summary
	// totals, which would tell what lies outside, are then dropped.
	Filtered bool
}

// Dir returns the view directory of a snapshot's manifest list under a
// filter, inside the table location loc.
func Dir(loc string, snapshotID int64, manifestList, filter string) string {
	sum := sha256.Sum256([]byte(manifestList + "\x00" + filter))
	return strings.TrimSuffix(loc, "/") + "/metadata/" + DirPrefix + strconv.FormatInt(snapshotID, 10) + "-" +
		hex.EncodeToString(sum[:8]) + "/"
}

// SnapshotOf returns the snapshot id of the view directory a location lies
// in, if it lies in one.
func SnapshotOf(location string) (int64, bool) {
	i := strings.Index(location, "/metadata/"+DirPrefix)
	if i < 0 {
		return 0, false
	}
	rest := location[i+len("/metadata/"+DirPrefix):]
	dash := strings.IndexByte(rest, '-')
	if dash <= 0 || !strings.Contains(rest[dash:], "/") {
		return 0, false
	}
	id, err := strconv.ParseInt(rest[:dash], 10, 64)
	if err != nil {
		return 0, false
	}
	return id, true
}

// Live reports whether location lies in the view directory of one of md's
// snapshots: orphan-file removal keeps it.
func Live(location string, md table.Metadata) bool {
	id, ok := SnapshotOf(location)
	if !ok {
		return false
	}
	return md.SnapshotByID(id) != nil
}

// Build derives the view of req's current snapshot, writing it unless its
// metadata file is there already (written before, here or by another
// node).
func Build(ctx context.Context, fsys FS, req Request) (*View, error) {
	md := req.Metadata
	snap := md.CurrentSnapshot()
	var snapID int64 = -1
	list := ""
	if snap != nil {
		snapID, list = snap.SnapshotID, snap.ManifestList
	}
	dir := Dir(md.Location(), snapID, list, req.Filter)
	sum := sha256.Sum256([]byte(req.MetadataLocation))
	v := &View{Dir: dir, MetadataLocation: dir + hex.EncodeToString(sum[:8]) + ".metadata.json"}
	raw, err := fsys.ReadFile(v.MetadataLocation)
	if err == nil {
		v.Metadata = raw
		return v, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("subset: read %s: %w", v.MetadataLocation, err)
	}
	var listLoc string
	if snap != nil {
		var err error
		if listLoc, err = writeManifests(ctx, fsys, md, snap, dir, req, v); err != nil {
			return nil, err
		}
	}
	if raw, err = derive(req.Trimmed, listLoc, req.Filtered); err != nil {
		return nil, err
	}
	if err := fsys.WriteFile(v.MetadataLocation, raw); err != nil {
		return nil, fmt.Errorf("subset: write %s: %w", v.MetadataLocation, err)
	}
	v.Metadata = raw
	return v, nil
}

type group struct {
	content iceberg.ManifestContent
	spec    int
}

// writeManifests writes the view's manifests and manifest list and returns
// the list's location. Entries stream from the snapshot's manifests into one
// writer per content and partition spec; none is held in memory.
func writeManifests(ctx context.Context, fsys FS, md table.Metadata, snap *table.Snapshot, dir string, req Request, v *View) (string, error) {
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return "", fmt.Errorf("subset: read manifest list %s: %w", snap.ManifestList, err)
	}
	specs := map[int]iceberg.PartitionSpec{}
	for _, s := range md.PartitionSpecs() {
		specs[s.ID()] = s
	}
	schema := md.CurrentSchema()
	if snap.SchemaID != nil {
		for _, s := range md.Schemas() {
			if s.ID == *snap.SchemaID {
				schema = s
			}
		}
	}
	type writer struct {
		buf bytes.Buffer
		w   *iceberg.ManifestWriter
		loc string
		g   group
	}
	writers := map[group]*writer{}
	var order []*writer
	for _, m := range manifests {
		g := group{content: m.ManifestContent(), spec: int(m.PartitionSpecID())}
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				return "", fmt.Errorf("subset: read manifest %s: %w", m.FilePath(), err)
			}
			if err := ctx.Err(); err != nil {
				return "", err
			}
			df := e.DataFile()
			if req.Keep != nil {
				ok, err := req.Keep(df)
				if err != nil {
					return "", err
				}
				if !ok {
					continue
				}
			}
			wr := writers[g]
			if wr == nil {
				spec, ok := specs[g.spec]
				if !ok {
					return "", fmt.Errorf("subset: the table has no partition spec %d", g.spec)
				}
				wr = &writer{g: g, loc: dir + "m" + strconv.Itoa(int(g.content)) + "-" + strconv.Itoa(g.spec) + ".avro"}
				if wr.w, err = iceberg.NewManifestWriter(md.Version(), &wr.buf, spec, schema, snap.SnapshotID,
					iceberg.WithManifestWriterContent(g.content)); err != nil {
					return "", fmt.Errorf("subset: manifest writer: %w", err)
				}
				writers[g] = wr
				order = append(order, wr)
			}
			if err := wr.w.Existing(e); err != nil {
				return "", fmt.Errorf("subset: write manifest entry: %w", err)
			}
			v.Files++
			v.Bytes += df.FileSizeBytes()
		}
	}
	files := make([]iceberg.ManifestFile, 0, len(order))
	for _, wr := range order {
		if err := wr.w.Close(); err != nil {
			return "", fmt.Errorf("subset: close manifest: %w", err)
		}
		mf, err := wr.w.ToManifestFile(wr.loc, int64(wr.buf.Len()), iceberg.WithManifestFileContent(wr.g.content))
		if err != nil {
			return "", fmt.Errorf("subset: manifest file: %w", err)
		}
		if err := fsys.WriteFile(wr.loc, wr.buf.Bytes()); err != nil {
			return "", fmt.Errorf("subset: write %s: %w", wr.loc, err)
		}
		files = append(files, mf)
	}
	listLoc := dir + ListName
	var buf bytes.Buffer
	seq := snap.SequenceNumber
	var firstRowID int64
	if snap.FirstRowID != nil {
		firstRowID = *snap.FirstRowID
	}
	if err := iceberg.WriteManifestList(md.Version(), &buf, snap.SnapshotID, snap.ParentSnapshotID, &seq, firstRowID, files); err != nil {
		return "", fmt.Errorf("subset: write manifest list: %w", err)
	}
	if err := fsys.WriteFile(listLoc, buf.Bytes()); err != nil {
		return "", fmt.Errorf("subset: write %s: %w", listLoc, err)
	}
	return listLoc, nil
}

// derive returns the trimmed metadata JSON with the current snapshot's
// manifest list replaced by the view's, its statistics files dropped (the
// view's credential could not read them), and, when filtered, its summary
// reduced to the operation.
func derive(trimmed []byte, listLoc string, filtered bool) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return nil, fmt.Errorf("subset: metadata: %w", err)
	}
	delete(obj, "statistics")
	delete(obj, "partition-statistics")
	if listLoc != "" {
		var snaps []map[string]json.RawMessage
		if err := json.Unmarshal(obj["snapshots"], &snaps); err != nil {
			return nil, fmt.Errorf("subset: metadata snapshots: %w", err)
		}
		for _, s := range snaps {
			s["manifest-list"], _ = json.Marshal(listLoc)
			delete(s, "manifests")
			if filtered {
				var sum map[string]json.RawMessage
				_ = json.Unmarshal(s["summary"], &sum)
				op := sum["operation"]
				if op == nil {
					op = json.RawMessage(`"append"`)
				}
				s["summary"], _ = json.Marshal(map[string]json.RawMessage{"operation": op})
			}
		}
		obj["snapshots"], _ = json.Marshal(snaps)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("subset: metadata: %w", err)
	}
	return out, nil
}
