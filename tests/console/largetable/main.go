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

	"github.com/floe-lake/floe/internal/testkit/largetable"
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
	tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, largetable.Schema())
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
	last := int64(snapshots)
	mfs, err := largetable.Manifests(loc, last, files, wfs.WriteFile)
	if err != nil {
		return err
	}
	writeList := func(path string, snap int64, parent *int64, mfs []iceberg.ManifestFile) error {
		b, err := largetable.ManifestList(snap, parent, last, mfs)
		if err != nil {
			return err
		}
		return wfs.WriteFile(path, b)
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
	updates := largetable.Updates(last, time.Now().UnixMilli(), empty, list)
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
