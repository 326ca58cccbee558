package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
)

// DeltaRequest names a Delta Lake table to register.
type DeltaRequest struct {
	Warehouse string
	// Table is the name of the new Iceberg table.
	Table catalog.Ident
	// Location is the Delta table's root (the directory holding
	// _delta_log), inside the warehouse storage.
	Location string
	// Authorize, if set, is called before anything is read.
	Authorize func() error
}

// deltaCommit is one version file of _delta_log.
var deltaCommit = regexp.MustCompile(`^(\d{20})\.json$`)

// deltaCheckpoint is a checkpoint file (classic single or multi-part).
var deltaCheckpoint = regexp.MustCompile(`^(\d{20})\.checkpoint(\.\d+\.\d+)?\.parquet$`)

// deltaLog is the state of a Delta table at its latest version.
type deltaLog struct {
	version   int64
	schema    string   // metaData.schemaString
	partition []string // metaData.partitionColumns
	config    map[string]string
	files     map[string]deltaAdd // active files by path
	readerV   int
	features  []string
}

type deltaAdd struct {
	Path            string             `json:"path"`
	PartitionValues map[string]*string `json:"partitionValues"`
	Size            int64              `json:"size"`
	DeletionVector  json.RawMessage    `json:"deletionVector"`
}

type deltaAction struct {
	Protocol *struct {
		MinReaderVersion int      `json:"minReaderVersion"`
		ReaderFeatures   []string `json:"readerFeatures"`
	} `json:"protocol"`
	MetaData *struct {
		SchemaString     string            `json:"schemaString"`
		PartitionColumns []string          `json:"partitionColumns"`
		Configuration    map[string]string `json:"configuration"`
	} `json:"metaData"`
	Add    *deltaAdd `json:"add"`
	Remove *struct {
		Path string `json:"path"`
	} `json:"remove"`
}

// RegisterDelta creates an Iceberg table over a Delta Lake table without
// copying data: it replays the JSON commits of _delta_log to find the
// active Parquet files and the schema, creates the Iceberg table at the
// Delta table's location (Iceberg metadata goes to <location>/metadata/)
// and commits the files as one snapshot. Delta partition columns, whose
// values live in the file paths and not in the files, become identity
// partition fields whose values are recorded per file; readers fill such
// a column from the partition value (Iceberg's column projection rule).
//
// Refused, with a clear error: a log whose early commits were removed
// after a checkpoint (checkpoints are not read), column mapping, deletion
// vectors, and locations outside the warehouse storage. The Iceberg table
// is a snapshot of the Delta table at its latest version: later Delta
// commits are not followed (register again under a new name).
func (s *Service) RegisterDelta(ctx context.Context, req DeltaRequest) (res Result, err error) {
	start := time.Now()
	res = Result{Table: req.Table.String(), Mode: Create, Format: Parquet}
	if err := req.Table.Validate(); err != nil {
		return res, err
	}
	if req.Authorize != nil {
		if err := req.Authorize(); err != nil {
			return res, err
		}
	}
	root, err := s.warehouseRoot(ctx, req.Warehouse)
	if err != nil {
		return res, err
	}
	loc, err := inside(root, req.Location)
	if err != nil {
		return res, err
	}
	log, err := s.readDeltaLog(ctx, loc)
	if err != nil {
		return res, err
	}
	sc, err := deltaSchema(log.schema, log.partition)
	if err != nil {
		return res, err
	}
	var fields []iceberg.PartitionField
	for i, name := range log.partition {
		f, _ := sc.FindFieldByName(name)
		fields = append(fields, iceberg.PartitionField{SourceIDs: []int{f.ID}, FieldID: firstPartitionFieldID + i, Name: name, Transform: iceberg.IdentityTransform{}})
	}
	spec := iceberg.NewPartitionSpec(fields...)
	props := map[string]string{"floe.source.format": "delta", "floe.source.delta-version": strconv.FormatInt(log.version, 10)}
	if _, err := s.cat.CreateTable(ctx, req.Warehouse, req.Table.Namespace, catalog.CreateTableRequest{
		Name: req.Table.Name, Schema: sc, Spec: &spec, Location: loc, Properties: props}); err != nil {
		return res, err
	}
	res.Created = true
	defer func() {
		if err != nil {
			// Purging a table at a location it does not own removes only its metadata.
			if derr := s.cat.DropTable(context.WithoutCancel(ctx), req.Warehouse, req.Table, true); derr != nil {
				s.log.WarnContext(ctx, "ingest: cannot drop the table of a failed Delta registration", "table", req.Table.String(), "err", derr)
			}
		}
	}()
	tbl, err := s.lake.LoadTable(ctx, req.Warehouse, req.Table)
	if err != nil {
		return res, err
	}
	paths := make([]string, 0, len(log.files))
	byPath := map[string]deltaAdd{}
	for p, add := range log.files {
		full, err := deltaFilePath(root, loc, p)
		if err != nil {
			return res, err
		}
		paths = append(paths, full)
		byPath[full] = add
	}
	slices.Sort(paths)
	tspec := tbl.Spec()
	part := func(p string) (map[int]any, error) {
		vals := map[int]any{}
		for _, pf := range tspec.Fields() {
			col, _ := tbl.Schema().FindFieldByID(pf.SourceIDs[0])
			raw := byPath[p].PartitionValues[col.Name]
			if raw == nil {
				vals[pf.FieldID] = nil
				continue
			}
			v, err := deltaPartitionValue(*raw, col.Type)
			if err != nil {
				return nil, floe.E(floe.Invalid, "delta", "file %s: partition column %q: %s", p, col.Name, err)
			}
			vals[pf.FieldID] = v
		}
		return vals, nil
	}
	if len(log.partition) == 0 {
		part = nil
	}
	files, err := dataFiles(ctx, tbl, paths, part)
	if err != nil {
		return res, err
	}
	for _, f := range files {
		res.Rows += f.Count()
		res.Bytes += f.FileSizeBytes()
	}
	res.Files = len(files)
	if len(files) > 0 {
		out, err := lake.AppendFiles(ctx, tbl, files, iceberg.Properties{"floe.source.delta-version": strconv.FormatInt(log.version, 10)})
		if err != nil {
			return res, err
		}
		if snap := out.CurrentSnapshot(); snap != nil {
			res.SnapshotID = snap.SnapshotID
		}
	}
	res.Seconds = time.Since(start).Seconds()
	s.log.InfoContext(ctx, "ingest: registered a Delta table", "table", req.Table.String(), "location", loc,
		"delta_version", log.version, "files", res.Files, "rows", res.Rows)
	return res, nil
}

// deltaFilePath resolves the path of an add action (relative to the table
// root and URL-encoded, or an absolute URI) and requires it in the
// warehouse and inside the table root loc.
func deltaFilePath(root, loc, p string) (string, error) {
	if strings.Contains(p, "://") {
		n, err := inside(root, p)
		if err != nil {
			return "", err
		}
		if !catalog.Within(loc, n) {
			return "", catalog.OutsideError(floe.Invalid, "data file", p, loc)
		}
		return n, nil
	}
	un, err := url.PathUnescape(p)
	if err != nil {
		return "", floe.E(floe.Invalid, "delta", "bad file path %q in the Delta log", p)
	}
	if strings.HasPrefix(un, "/") || slices.Contains(strings.Split(un, "/"), "..") {
		return "", floe.E(floe.Invalid, "delta", "file path %q in the Delta log leaves the table", p)
	}
	return inside(root, loc+"/"+un)
}

// readDeltaLog replays the JSON commits of the Delta table at loc.
func (s *Service) readDeltaLog(ctx context.Context, loc string) (*deltaLog, error) {
	logDir := loc + "/_delta_log"
	var versions []int64
	checkpoint := int64(-1)
	names, err := s.list(ctx, logDir, func(rel string) bool { return !strings.Contains(rel, "/") })
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		base := path.Base(n)
		if m := deltaCommit.FindStringSubmatch(base); m != nil {
			v, _ := strconv.ParseInt(m[1], 10, 64)
			versions = append(versions, v)
		} else if m := deltaCheckpoint.FindStringSubmatch(base); m != nil {
			v, _ := strconv.ParseInt(m[1], 10, 64)
			checkpoint = max(checkpoint, v)
		}
	}
	if len(versions) == 0 {
		return nil, floe.E(floe.Invalid, "delta", "no Delta log at %s (no _delta_log/*.json commit)", loc)
	}
	slices.Sort(versions)
	for i, v := range versions {
		if v != int64(i) {
			if checkpoint >= 0 {
				return nil, floe.E(floe.Unsupported, "delta", "the Delta log at %s starts at a checkpoint (version %d): commits before it were removed, and checkpoints are not read yet", loc, checkpoint)
			}
			return nil, floe.E(floe.Invalid, "delta", "the Delta log at %s lacks commit %d", loc, i)
		}
	}
	rd, ok := s.lake.FS().(icebergio.ReadFileIO)
	if !ok {
		return nil, floe.E(floe.Unsupported, "storage", "this server's storage cannot read whole files")
	}
	log := &deltaLog{files: map[string]deltaAdd{}}
	for _, v := range versions {
		name := fmt.Sprintf("%s/%020d.json", logDir, v)
		b, err := rd.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("ingest: read %s: %w", name, err)
		}
		if err := log.apply(b); err != nil {
			return nil, floe.E(floe.Invalid, "delta", "Delta commit %d: %s", v, err)
		}
		log.version = v
	}
	if log.schema == "" {
		return nil, floe.E(floe.Invalid, "delta", "the Delta log at %s has no metaData action", loc)
	}
	if log.readerV > 3 {
		return nil, floe.E(floe.Unsupported, "delta", "Delta reader protocol version %d is not supported", log.readerV)
	}
	for _, f := range log.features {
		switch f {
		case "deletionVectors", "columnMapping":
			return nil, floe.E(floe.Unsupported, "delta", "the Delta table uses %s, which Floe cannot map to Iceberg without rewriting", f)
		case "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck", "typeWidening-preview", "typeWidening":
		default:
			return nil, floe.E(floe.Unsupported, "delta", "the Delta table uses the reader feature %q, which Floe does not support", f)
		}
	}
	if m := log.config["delta.columnMapping.mode"]; m != "" && m != "none" {
		return nil, floe.E(floe.Unsupported, "delta", "the Delta table uses column mapping (mode %s): its files' column names differ from the schema", m)
	}
	return log, nil
}

// apply applies the actions of one commit.
func (l *deltaLog) apply(b []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var a deltaAction
		if err := json.Unmarshal(raw, &a); err != nil {
			return fmt.Errorf("line %d: %s", line, err)
		}
		switch {
		case a.Protocol != nil:
			l.readerV, l.features = a.Protocol.MinReaderVersion, a.Protocol.ReaderFeatures
		case a.MetaData != nil:
			// The latest metaData wins: the files are read with the final schema.
			l.schema, l.partition, l.config = a.MetaData.SchemaString, a.MetaData.PartitionColumns, a.MetaData.Configuration
		case a.Add != nil:
			if len(a.Add.DeletionVector) > 0 && string(a.Add.DeletionVector) != "null" {
				return fmt.Errorf("file %s has a deletion vector, which Floe cannot map to Iceberg", a.Add.Path)
			}
			if a.Add.Path == "" {
				return fmt.Errorf("line %d: add action without a path", line)
			}
			l.files[a.Add.Path] = *a.Add
		case a.Remove != nil:
			delete(l.files, a.Remove.Path)
		}
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		return err
	}
	return nil
}

// deltaField is a field of a Delta schemaString.
type deltaField struct {
	Name     string          `json:"name"`
	Type     json.RawMessage `json:"type"`
	Nullable bool            `json:"nullable"`
}

type deltaComplex struct {
	Type              string          `json:"type"`
	Fields            []deltaField    `json:"fields"`
	ElementType       json.RawMessage `json:"elementType"`
	ContainsNull      bool            `json:"containsNull"`
	KeyType           json.RawMessage `json:"keyType"`
	ValueType         json.RawMessage `json:"valueType"`
	ValueContainsNull bool            `json:"valueContainsNull"`
}

// deltaSchema maps a Delta schemaString to an Iceberg schema with field
// ids 1, 2, ... in order. Partition columns are made optional.
func deltaSchema(schemaString string, partition []string) (*iceberg.Schema, error) {
	var root deltaComplex
	if err := json.Unmarshal([]byte(schemaString), &root); err != nil || root.Type != "struct" {
		return nil, floe.E(floe.Invalid, "delta", "the Delta schemaString is not a struct type")
	}
	next := 0
	id := func() int { next++; return next }
	// Top-level ids first, as Iceberg assigns them.
	ids := make([]int, len(root.Fields))
	for i := range root.Fields {
		ids[i] = id()
	}
	fields := make([]iceberg.NestedField, len(root.Fields))
	for i, f := range root.Fields {
		t, err := deltaType(f.Type, id, 0)
		if err != nil {
			return nil, floe.E(floe.Invalid, "delta", "column %q: %s", f.Name, err)
		}
		fields[i] = iceberg.NestedField{ID: ids[i], Name: f.Name, Type: t, Required: !f.Nullable && !slices.Contains(partition, f.Name)}
	}
	for _, p := range partition {
		if !slices.ContainsFunc(root.Fields, func(f deltaField) bool { return f.Name == p }) {
			return nil, floe.E(floe.Invalid, "delta", "partition column %q is not in the schema", p)
		}
	}
	return iceberg.NewSchema(0, fields...), nil
}

var deltaDecimal = regexp.MustCompile(`^decimal\((\d+),\s*(\d+)\)$`)

func deltaType(raw json.RawMessage, id func() int, depth int) (iceberg.Type, error) {
	if depth > 32 {
		return nil, fmt.Errorf("types nested too deeply")
	}
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		switch name {
		case "string":
			return iceberg.PrimitiveTypes.String, nil
		case "long":
			return iceberg.PrimitiveTypes.Int64, nil
		case "integer", "short", "byte":
			return iceberg.PrimitiveTypes.Int32, nil
		case "float":
			return iceberg.PrimitiveTypes.Float32, nil
		case "double":
			return iceberg.PrimitiveTypes.Float64, nil
		case "boolean":
			return iceberg.PrimitiveTypes.Bool, nil
		case "binary":
			return iceberg.PrimitiveTypes.Binary, nil
		case "date":
			return iceberg.PrimitiveTypes.Date, nil
		case "timestamp":
			return iceberg.PrimitiveTypes.TimestampTz, nil
		case "timestamp_ntz":
			return iceberg.PrimitiveTypes.Timestamp, nil
		}
		if m := deltaDecimal.FindStringSubmatch(name); m != nil {
			p, _ := strconv.Atoi(m[1])
			sc, _ := strconv.Atoi(m[2])
			if p < 1 || p > 38 || sc > p {
				return nil, fmt.Errorf("bad decimal %s", name)
			}
			return iceberg.DecimalTypeOf(p, sc), nil
		}
		return nil, fmt.Errorf("unsupported Delta type %q", name)
	}
	var c deltaComplex
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("bad type %s", trimMsg(string(raw)))
	}
	switch c.Type {
	case "struct":
		ids := make([]int, len(c.Fields))
		for i := range c.Fields {
			ids[i] = id()
		}
		fs := make([]iceberg.NestedField, len(c.Fields))
		for i, f := range c.Fields {
			t, err := deltaType(f.Type, id, depth+1)
			if err != nil {
				return nil, err
			}
			fs[i] = iceberg.NestedField{ID: ids[i], Name: f.Name, Type: t, Required: !f.Nullable}
		}
		return &iceberg.StructType{FieldList: fs}, nil
	case "array":
		eid := id()
		t, err := deltaType(c.ElementType, id, depth+1)
		if err != nil {
			return nil, err
		}
		return &iceberg.ListType{ElementID: eid, Element: t, ElementRequired: !c.ContainsNull}, nil
	case "map":
		kid, vid := id(), id()
		k, err := deltaType(c.KeyType, id, depth+1)
		if err != nil {
			return nil, err
		}
		v, err := deltaType(c.ValueType, id, depth+1)
		if err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyID: kid, KeyType: k, ValueID: vid, ValueType: v, ValueRequired: !c.ValueContainsNull}, nil
	}
	return nil, fmt.Errorf("unsupported Delta type %q", c.Type)
}

// deltaPartitionValue converts a Delta partition value (a string) to the
// Go value iceberg-go keeps for a partition field of type t.
func deltaPartitionValue(s string, t iceberg.Type) (any, error) {
	switch t.(type) {
	case iceberg.StringType:
		return s, nil
	case iceberg.Int64Type:
		return strconv.ParseInt(s, 10, 64)
	case iceberg.Int32Type:
		v, err := strconv.ParseInt(s, 10, 32)
		return int32(v), err
	case iceberg.BooleanType:
		return strconv.ParseBool(s)
	case iceberg.DateType:
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return nil, err
		}
		return iceberg.Date(d.Unix() / 86400), nil
	case iceberg.Float64Type:
		return strconv.ParseFloat(s, 64)
	case iceberg.Float32Type:
		v, err := strconv.ParseFloat(s, 32)
		return float32(v), err
	}
	return nil, fmt.Errorf("partition columns of type %s are not supported", t)
}
