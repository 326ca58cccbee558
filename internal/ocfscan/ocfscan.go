// Package ocfscan reads only the file paths out of Iceberg manifest lists
// and manifests (Avro object container files), without decoding the rest of
// each record.
//
// The catalog proves, on every commit that adds a snapshot, that each file
// the snapshot references lies inside the table's location. That needs the
// manifest path of every entry of the new manifest list and the file path
// of every entry of each new manifest, nothing else; decoding whole records
// (partition tuples, column statistics maps, bounds) and parsing the
// embedded writer schema of every file is most of what such a check would
// cost. A Scanner frames the container itself, keeps the writer schemas it
// has seen (resolved against a reader schema of just the path fields) in a
// bounded cache keyed by the schema text, and skips every other field.
//
// Input is untrusted: every length is checked against what remains, block
// decompression is bounded, and a malformed file is an error, never a
// panic.
package ocfscan

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// ErrMalformed is wrapped by every error about the file itself (as opposed
// to one of the reader's own limits).
var ErrMalformed = errors.New("malformed Avro container")

// Limits of one Scanner.
const (
	// DefaultSchemas is the default number of distinct writer schemas a
	// Scanner keeps resolved. Manifests of tables with different partition
	// specs have different schemas; manifest lists have one per format
	// version.
	DefaultSchemas = 256
	// MaxBlockBytes bounds one decompressed data block.
	MaxBlockBytes = 64 << 20
	// maxMetaEntries bounds the entries of a container's header map.
	maxMetaEntries = 1024
)

var magic = []byte{'O', 'b', 'j', 1}

// kind tells which paths a scan reads.
type kind uint8

const (
	kindList     kind = iota // manifest list: manifest_path
	kindManifest             // manifest: data_file.content, data_file.file_path
)

// Scanner reads paths out of manifest lists and manifests. Safe for
// concurrent use.
type Scanner struct {
	mu      sync.Mutex
	max     int
	entries map[[32]byte]*list.Element // of *cached
	lru     *list.List                 // front: most recently used
}

type cached struct {
	key    [32]byte
	schema *avro.Schema // writer resolved against the path-only reader
}

// New returns a Scanner that keeps at most maxSchemas resolved writer
// schemas (DefaultSchemas when maxSchemas <= 0).
func New(maxSchemas int) *Scanner {
	if maxSchemas <= 0 {
		maxSchemas = DefaultSchemas
	}
	return &Scanner{max: maxSchemas, entries: map[[32]byte]*list.Element{}, lru: list.New()}
}

// CachedSchemas returns how many resolved schemas the Scanner holds.
func (s *Scanner) CachedSchemas() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

// listRecord is a manifest list entry as the scan decodes it.
type listRecord struct {
	Path string `avro:"manifest_path"`
}

// manifestRecord is a manifest entry as the scan decodes it.
type manifestRecord struct {
	DataFile struct {
		Content int32  `avro:"content"`
		Path    string `avro:"file_path"`
	} `avro:"data_file"`
}

// ManifestPaths returns the manifest_path of every entry of the manifest
// list raw, in file order.
func (s *Scanner) ManifestPaths(raw []byte) ([]string, error) {
	var out []string
	var rec listRecord
	err := s.scan(raw, kindList, &rec, func() error {
		out = append(out, rec.Path)
		return nil
	})
	return out, err
}

// Content values of a manifest entry's data file.
const (
	// ContentData is a data file.
	ContentData int32 = 0
	// ContentPositionDeletes is a position delete file.
	ContentPositionDeletes int32 = 1
	// ContentEqualityDeletes is an equality delete file.
	ContentEqualityDeletes int32 = 2
)

// EntryPaths calls fn with the file path and content (ContentData, ...)
// of every entry of the manifest raw, whatever its status, in file order.
// A v1 manifest, which has no content field, reports ContentData. An error
// from fn stops the scan and is returned as is.
func (s *Scanner) EntryPaths(raw []byte, fn func(path string, content int32) error) error {
	var rec manifestRecord
	return s.scan(raw, kindManifest, &rec, func() error {
		return fn(rec.DataFile.Path, rec.DataFile.Content)
	})
}

// scan frames the container raw and decodes each record into v with the
// writer schema resolved for k, calling each after every record.
func (s *Scanner) scan(raw []byte, k kind, v any, each func() error) error {
	d := decoder{b: raw}
	if !bytes.HasPrefix(raw, magic) {
		return fmt.Errorf("%w: no Avro magic", ErrMalformed)
	}
	d.b = d.b[len(magic):]
	meta, err := d.meta()
	if err != nil {
		return err
	}
	sync, err := d.take(16)
	if err != nil {
		return fmt.Errorf("%w: sync marker: %w", ErrMalformed, err)
	}
	schemaJSON, ok := meta["avro.schema"]
	if !ok {
		return fmt.Errorf("%w: no avro.schema in the header", ErrMalformed)
	}
	schema, err := s.resolved(schemaJSON, k)
	if err != nil {
		return err
	}
	codec, err := codecFor(string(meta["avro.codec"]))
	if err != nil {
		return err
	}
	if codec != nil {
		defer codec.Close()
	}
	for len(d.b) > 0 {
		count, err := d.long()
		if err != nil {
			return fmt.Errorf("%w: block count: %w", ErrMalformed, err)
		}
		size, err := d.long()
		if err != nil {
			return fmt.Errorf("%w: block size: %w", ErrMalformed, err)
		}
		if count < 0 || size < 0 {
			return fmt.Errorf("%w: negative block count or size", ErrMalformed)
		}
		data, err := d.take(size)
		if err != nil {
			return fmt.Errorf("%w: block data: %w", ErrMalformed, err)
		}
		mark, err := d.take(16)
		if err != nil || !bytes.Equal(mark, sync) {
			return fmt.Errorf("%w: block does not end with the sync marker", ErrMalformed)
		}
		block, err := decompress(codec, data)
		if err != nil {
			return err
		}
		for i := int64(0); i < count; i++ {
			if len(block) == 0 {
				return fmt.Errorf("%w: block holds fewer records than it declares", ErrMalformed)
			}
			if block, err = schema.Decode(block, v); err != nil {
				return fmt.Errorf("%w: record: %w", ErrMalformed, err)
			}
			if err := each(); err != nil {
				return err
			}
		}
		if len(block) != 0 {
			return fmt.Errorf("%w: block holds more bytes than its records", ErrMalformed)
		}
	}
	return nil
}

// resolved returns the writer schema schemaJSON resolved against the
// path-only reader schema of k, from the cache or newly parsed.
func (s *Scanner) resolved(schemaJSON []byte, k kind) (*avro.Schema, error) {
	h := sha256.New()
	h.Write([]byte{byte(k)})
	h.Write(schemaJSON)
	var key [32]byte
	h.Sum(key[:0])
	s.mu.Lock()
	if e, ok := s.entries[key]; ok {
		s.lru.MoveToFront(e)
		sc := e.Value.(*cached).schema
		s.mu.Unlock()
		return sc, nil
	}
	s.mu.Unlock()

	writer, err := avro.Parse(string(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("%w: writer schema: %w", ErrMalformed, err)
	}
	readerJSON, err := readerSchema(schemaJSON, k)
	if err != nil {
		return nil, err
	}
	reader, err := avro.Parse(readerJSON)
	if err != nil {
		return nil, fmt.Errorf("ocfscan: reader schema: %w", err)
	}
	sc, err := avro.Resolve(writer, reader)
	if err != nil {
		return nil, fmt.Errorf("%w: the writer schema lacks the path fields: %w", ErrMalformed, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[key]; ok {
		s.lru.MoveToFront(e)
		return e.Value.(*cached).schema, nil
	}
	s.entries[key] = s.lru.PushFront(&cached{key: key, schema: sc})
	for s.lru.Len() > s.max {
		old := s.lru.Back()
		s.lru.Remove(old)
		delete(s.entries, old.Value.(*cached).key)
	}
	return sc, nil
}

// namedType is the part of a JSON Avro schema the reader schema needs.
type namedType struct {
	Type      json.RawMessage `json:"type"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Fields    []struct {
		Name string          `json:"name"`
		Type json.RawMessage `json:"type"`
	} `json:"fields"`
}

// fullName is the type's name with its namespace, if any, as Avro
// resolution compares them (a dotted name already is full).
func (n namedType) fullName(parentNS string) string {
	ns := n.Namespace
	if ns == "" {
		ns = parentNS
	}
	if ns == "" || strings.Contains(n.Name, ".") {
		return n.Name
	}
	return ns + "." + n.Name
}

// namespace of the type for its nested types.
func (n namedType) namespace(parentNS string) string {
	if i := strings.LastIndexByte(n.Name, '.'); i >= 0 {
		return n.Name[:i]
	}
	if n.Namespace != "" {
		return n.Namespace
	}
	return parentNS
}

// readerSchema builds the reader schema of k for a writer schema: record
// names must match the writer's for Avro resolution, so they are taken
// from it.
func readerSchema(writerJSON []byte, k kind) (string, error) {
	var root namedType
	if err := json.Unmarshal(writerJSON, &root); err != nil || root.Name == "" {
		return "", fmt.Errorf("%w: the writer schema is not a named record", ErrMalformed)
	}
	rootName := root.fullName("")
	if k == kindList {
		return mustJSON(map[string]any{"type": "record", "name": rootName, "fields": []any{
			map[string]any{"name": "manifest_path", "type": "string"},
		}}), nil
	}
	for _, f := range root.Fields {
		if f.Name != "data_file" {
			continue
		}
		var df namedType
		if err := json.Unmarshal(f.Type, &df); err != nil || df.Name == "" {
			return "", fmt.Errorf("%w: data_file is not a named record", ErrMalformed)
		}
		return mustJSON(map[string]any{"type": "record", "name": rootName, "fields": []any{
			map[string]any{"name": "data_file", "type": map[string]any{
				"type": "record", "name": df.fullName(root.namespace("")), "fields": []any{
					map[string]any{"name": "content", "type": "int", "default": 0},
					map[string]any{"name": "file_path", "type": "string"},
				}}},
		}}), nil
	}
	return "", fmt.Errorf("%w: the writer schema has no data_file field", ErrMalformed)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return string(b)
}

// codecFor returns the codec a header names ("" and "null" are none).
func codecFor(name string) (ocf.Codec, error) {
	switch name {
	case "", "null":
		return nil, nil
	case "deflate":
		return ocf.DeflateCodec(-1), nil
	case "snappy":
		return ocf.SnappyCodec(), nil
	case "zstandard":
		c, err := ocf.ZstdCodec(nil, nil)
		if err != nil {
			return nil, fmt.Errorf("ocfscan: zstd: %w", err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("%w: unknown codec %q", ErrMalformed, name)
}

// decompress inflates one block, bounded by MaxBlockBytes.
func decompress(c ocf.Codec, data []byte) ([]byte, error) {
	if c == nil {
		return data, nil
	}
	var (
		out []byte
		err error
	)
	if b, ok := c.(ocf.BoundedDecompressor); ok {
		out, err = b.DecompressBounded(data, MaxBlockBytes)
	} else {
		out, err = c.Decompress(data)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: block: %w", ErrMalformed, err)
	}
	if len(out) > MaxBlockBytes {
		return nil, fmt.Errorf("%w: a block inflates past %d bytes", ErrMalformed, MaxBlockBytes)
	}
	return out, nil
}

// decoder reads Avro's binary encoding from a byte slice.
type decoder struct{ b []byte }

var errShort = errors.New("unexpected end of data")

// long reads a zig-zag varint.
func (d *decoder) long() (int64, error) {
	var u uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if len(d.b) == 0 {
			return 0, errShort
		}
		c := d.b[0]
		d.b = d.b[1:]
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return 0, errors.New("varint longer than 64 bits")
}

// take returns the next n bytes.
func (d *decoder) take(n int64) ([]byte, error) {
	if n < 0 || n > int64(len(d.b)) {
		return nil, errShort
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out, nil
}

// bytes reads a length-prefixed byte string.
func (d *decoder) bytes() ([]byte, error) {
	n, err := d.long()
	if err != nil {
		return nil, err
	}
	return d.take(n)
}

// meta reads the header's map of bytes.
func (d *decoder) meta() (map[string][]byte, error) {
	out := map[string][]byte{}
	for {
		count, err := d.long()
		if err != nil {
			return nil, fmt.Errorf("%w: header: %w", ErrMalformed, err)
		}
		if count == 0 {
			return out, nil
		}
		if count < 0 {
			count = -count
			if count < 0 { // math.MinInt64
				return nil, fmt.Errorf("%w: header: bad block count", ErrMalformed)
			}
			if _, err := d.long(); err != nil { // the block's size in bytes
				return nil, fmt.Errorf("%w: header: %w", ErrMalformed, err)
			}
		}
		if count > maxMetaEntries-int64(len(out)) {
			return nil, fmt.Errorf("%w: header holds more than %d entries", ErrMalformed, maxMetaEntries)
		}
		for i := int64(0); i < count; i++ {
			k, err := d.bytes()
			if err != nil {
				return nil, fmt.Errorf("%w: header key: %w", ErrMalformed, err)
			}
			v, err := d.bytes()
			if err != nil {
				return nil, fmt.Errorf("%w: header value: %w", ErrMalformed, err)
			}
			out[string(k)] = v
		}
	}
}
