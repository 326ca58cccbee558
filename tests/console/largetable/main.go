// Command largetable makes a real Iceberg table with many snapshots and
// data files in a running Floe, for the console's browser speed test
// (tests/console/speed.test.mjs): through the REST catalog as any client
// would, it creates the table, writes manifests of 1,000 data files each
// (the data files themselves are not written: the table page reads only
// metadata and manifests) with the credentials the catalog vends, and
// commits all snapshots at once; the last snapshot holds every file.
//
//	go run ./tests/console/largetable -url http://127.0.0.1:8181 -credential id:secret
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/table"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8181", "Floe's catalog URL")
	cred := flag.String("credential", "", "client_id:client_secret of a principal that may create the table")
	warehouse := flag.String("warehouse", "floe", "warehouse (REST prefix)")
	ns := flag.String("namespace", "big", "namespace (made if missing)")
	name := flag.String("table", "events", "table name")
	snapshots := flag.Int("snapshots", 5000, "snapshots")
	files := flag.Int("files", 100000, "data files in the current snapshot")
	flag.Parse()
	start := time.Now()
	if err := run(context.Background(), *base, *cred, *warehouse, *ns, *name, *snapshots, *files); err != nil {
		fmt.Fprintln(os.Stderr, "largetable:", err)
		os.Exit(1)
	}
	fmt.Printf("largetable: %s.%s: %d snapshots, %d data files in %s\n", *ns, *name, *snapshots, *files, time.Since(start).Round(time.Millisecond))
}

func run(ctx context.Context, base, cred, warehouse, ns, name string, snapshots, files int) error {
	id, secret, ok := strings.Cut(cred, ":")
	if !ok || snapshots < 1 || files < 0 {
		return errors.New("-credential id:secret, -snapshots >= 1 and -files >= 0 are required")
	}
	cat, err := rest.NewCatalog(ctx, "floe", base, rest.WithCredential(cred), rest.WithWarehouseLocation(warehouse))
	if err != nil {
		return fmt.Errorf("REST catalog: %w", err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil && !errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("create namespace: %w", err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, sc)
	if err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("table storage: %w", err)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return errors.New("the table's storage is not writable")
	}
	loc := strings.TrimSuffix(tbl.Location(), "/")
	spec := iceberg.NewPartitionSpec()
	last := int64(snapshots)
	seq := last
	var mfs []iceberg.ManifestFile
	for m := 0; m*1000 < files; m++ {
		var entries []iceberg.ManifestEntry
		for i := m * 1000; i < min(files, (m+1)*1000); i++ {
			size := int64(64<<10) + int64(i%97)*(1<<20) // most files small, some large
			b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, fmt.Sprintf("%s/data/f-%06d.parquet", loc, i),
				iceberg.ParquetFile, nil, nil, nil, 1000, size)
			if err != nil {
				return err
			}
			sid := last
			entries = append(entries, iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &sid, &seq, &seq, b.Build()))
		}
		path := fmt.Sprintf("%s/metadata/m-%04d.avro", loc, m)
		var buf bytes.Buffer
		mf, err := iceberg.WriteManifest(path, &buf, 2, spec, sc, last, entries)
		if err != nil {
			return err
		}
		if err := wfs.WriteFile(path, buf.Bytes()); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		mfs = append(mfs, mf)
	}
	writeList := func(path string, snap int64, parent *int64, mfs []iceberg.ManifestFile) error {
		var buf bytes.Buffer
		s := seq
		if err := iceberg.WriteManifestList(2, &buf, snap, parent, &s, 0, mfs); err != nil {
			return err
		}
		return wfs.WriteFile(path, buf.Bytes())
	}
	empty, list := loc+"/metadata/snap-empty.avro", loc+"/metadata/snap-large.avro"
	if err := writeList(empty, 1, nil, nil); err != nil {
		return err
	}
	parent := last - 1
	if err := writeList(list, last, &parent, mfs); err != nil {
		return err
	}
	// One commit of every snapshot, as raw JSON (snapshot ids stay int64).
	startMs := time.Now().UnixMilli()
	var updates []map[string]any
	for i := int64(1); i <= last; i++ {
		s := map[string]any{"snapshot-id": i, "sequence-number": i, "timestamp-ms": startMs + i, "manifest-list": empty, "schema-id": 0,
			"summary": map[string]string{"operation": "append", "added-records": fmt.Sprint(1000 + i%50), "added-data-files": "20",
				"deleted-records": fmt.Sprint((i % 7) * 10)}}
		if i > 1 {
			s["parent-snapshot-id"] = i - 1
		}
		if i == last {
			s["manifest-list"] = list
		}
		updates = append(updates, map[string]any{"action": "add-snapshot", "snapshot": s})
	}
	updates = append(updates, map[string]any{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": last})
	body, err := json.Marshal(map[string]any{"requirements": []any{}, "updates": updates})
	if err != nil {
		return err
	}
	tok, err := token(ctx, base, id, secret)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/"+url.PathEscape(warehouse)+"/namespaces/"+url.PathEscape(ns)+"/tables/"+url.PathEscape(name), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 2000))
		return fmt.Errorf("commit %d snapshots: %d %s", snapshots, resp.StatusCode, b)
	}
	return nil
}

// token obtains an access token with client credentials.
func token(ctx context.Context, base, id, secret string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/oauth/tokens", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.AccessToken == "" {
		return "", fmt.Errorf("token: %d %v", resp.StatusCode, err)
	}
	return out.AccessToken, nil
}
