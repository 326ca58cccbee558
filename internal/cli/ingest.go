package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/lake/ingest"
	"github.com/floe-lake/floe/mgmtapi"
)

// The ingest commands (ingest, table add-files, table register-delta) talk
// to a Floe server over HTTP, so that they work against a remote one: the
// data streams in the request body, and the server checks the caller's
// privileges and records the audit event.

// ingestClient is the server connection of the ingest commands.
type ingestClient struct {
	*apiClient
	warehouse string
}

func bindIngestClient(fs *pflag.FlagSet, getenv func(string) string) *ingestClient {
	c := &ingestClient{apiClient: bindAPIClient(fs, getenv, DefaultURL, "Floe server URL (env FLOE_URL; default "+DefaultURL+")")}
	fs.StringVar(&c.warehouse, "warehouse", "", "warehouse (env FLOE_WAREHOUSE; default floe)")
	return c
}

func (c *ingestClient) wh() string {
	w := c.warehouse
	if w == "" {
		w = c.getenv("FLOE_WAREHOUSE")
	}
	if w == "" {
		w = "floe"
	}
	return w
}

// parseSize reads a byte size: 134217728, 128MiB, 128MB, 512k, 1g.
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, nil
	}
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1000}, {"mb", 1000_000}, {"gb", 1000_000_000},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(v), u.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: want a size such as 134217728, 128MiB or 512MB", s)
	}
	return n * mult, nil
}

// ingestCmd is `floe ingest NS.TABLE FILE|-`.
func ingestCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "ingest NS.TABLE FILE|-", Args: cobra.ExactArgs(2),
		Short: "Load a CSV, TSV, NDJSON, Parquet or Arrow IPC file into a table (create, append or overwrite)",
		Long: `Load a file (or standard input, "-") into a table through a Floe server. The
file streams to the server, which commits its rows as one snapshot: it creates
the table (schema inferred from the data, or --schema; partition spec
--partition), appends to it, or with --mode overwrite replaces all its rows.
On any error nothing is committed; a value that does not fit its column is
reported with its file, line or row and column. The namespace must exist
(floe namespace create NS), or pass --create-namespace. See docs/ingest.md.

  floe ingest --create-namespace sales.orders orders.csv
  floe ingest --partition 'day(ts), bucket(16, id)' sales.events events.parquet
  floe ingest --schema 'id long not null, name string, ts timestamptz' sales.people people.ndjson
  gzip -dc big.csv.gz | floe ingest --format csv --mode append sales.orders -`}
	cl := bindIngestClient(cmd.Flags(), getenv)
	f := cmd.Flags()
	format := f.String("format", "", "csv, tsv, ndjson, parquet, arrow (IPC file) or arrows (IPC stream); default by extension, else by content")
	mode := f.String("mode", "", "create, append or overwrite (default: create if the table is missing, else append)")
	partition := f.String("partition", "", "partition spec of a new table, e.g. 'day(ts), bucket(16, id), truncate(4, name), region'")
	schema := f.String("schema", "", "schema of a new table: 'id long not null, name string, ts timestamptz', a JSON Iceberg schema, or @FILE holding either")
	target := f.String("target-file-size", "", "target data file size, e.g. 128MiB (default: the table's write.target-file-size-bytes, 512 MiB)")
	batch := f.Int("batch-size", 0, "rows per record batch read by the server (default 65536)")
	progress := f.Bool("progress", false, "show progress on stderr even when it is not a terminal")
	quiet := f.Bool("quiet", false, "no progress")
	asJSON := f.Bool("json", false, "print the result as JSON")
	createNS := f.Bool("create-namespace", false, "create the table's namespace (and its parents) if missing")
	cmd.RunE = func(c *cobra.Command, args []string) error {
		id, err := tableArg(args[0])
		if err != nil {
			return err
		}
		fm, err := ingest.ParseFormat(*format)
		if err != nil {
			return err
		}
		if _, err := ingest.ParseMode(*mode); err != nil {
			return err
		}
		size, err := parseSize(*target)
		if err != nil {
			return fmt.Errorf("--target-file-size %w", err)
		}
		sc := *schema
		if rest, ok := strings.CutPrefix(sc, "@"); ok {
			b, err := os.ReadFile(rest)
			if err != nil {
				return fmt.Errorf("--schema: %w", err)
			}
			sc = string(b)
		}
		if sc != "" {
			if _, err := ingest.ParseSchema(sc); err != nil {
				return fmt.Errorf("--schema: %w", err)
			}
		}
		var in io.Reader = c.InOrStdin()
		total := int64(-1)
		name := ""
		if args[1] != "-" {
			file, err := os.Open(args[1])
			if err != nil {
				return err
			}
			defer file.Close()
			if st, err := file.Stat(); err == nil && st.Mode().IsRegular() {
				total = st.Size()
			}
			in, name = file, filepath.Base(args[1])
		}
		if fm == "" {
			fm = ingest.FormatOfName(name)
		}
		q := url.Values{}
		for k, v := range map[string]string{"format": string(fm), "mode": *mode, "partition": *partition, "schema": sc, "name": name} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if size > 0 {
			q.Set("target_file_size", strconv.FormatInt(size, 10))
		}
		if *batch > 0 {
			q.Set("batch_size", strconv.Itoa(*batch))
		}
		if *createNS {
			if err := ensureNamespace(c.Context(), cl, id.Namespace); err != nil {
				return err
			}
		}
		meter := &meter{r: in, lines: fm == ingest.CSV || fm == ingest.TSV || fm == ingest.NDJSON}
		show := !*quiet && (*progress || isTerminal(stderr))
		stop := func() {}
		if show {
			stop = meter.show(stderr, total)
		}
		var res ingest.Result
		err = cl.do(c.Context(), "POST", tableURL(cl.wh(), id)+"/ingest?"+q.Encode(), meter, total, "application/octet-stream", &res)
		stop()
		if floe.KindOf(err) == floe.NotFound && !*createNS && strings.Contains(err.Error(), "NoSuchNamespace") {
			return fmt.Errorf("%w; create it with floe namespace create %s, or ingest with --create-namespace", err, id.Namespace)
		}
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		}
		rate := 0.0
		if res.Seconds > 0 {
			rate = float64(res.Rows) / res.Seconds
		}
		fmt.Fprintf(stdout, "%s %s: %d rows (%s, %s) in %.2fs, %.0f rows/s; %d data files, %s; snapshot %d\n",
			res.Mode, res.Table, res.Rows, res.Format, ingestBytes(res.InputBytes), res.Seconds, rate, res.Files, ingestBytes(res.Bytes), res.SnapshotID)
		return nil
	}
	return cmd
}

// tableParent returns the `table` command of root, adding it if there is none
// yet (its subcommands are added by several files).
func tableParent(root *cobra.Command) *cobra.Command {
	for _, c := range root.Commands() {
		if c.Name() == "table" {
			return c
		}
	}
	table := &cobra.Command{Use: "table", Short: "Inspect and load tables"}
	root.AddCommand(table)
	return table
}

// addTableIngestCmds adds add-files and register-delta to the `table`
// command of root, creating it if there is none.
func addTableIngestCmds(root *cobra.Command, stdout io.Writer, getenv func(string) string) {
	table := tableParent(root)
	add := &cobra.Command{Use: "add-files NS.TABLE LOCATION...", Args: cobra.MinimumNArgs(2),
		Short: "Register existing Parquet files under a table's location in the table, without rewriting them",
		Long: `Register Parquet files that already lie under the table's own location in the
table, as one append snapshot, without copying or rewriting them. A location
ending in / takes every *.parquet object under it. Each file's schema must be
compatible with the table's; files outside the table's location are refused
(a table may reference only files inside its location). Put the files there
first, for example with the storage credentials that loading the table vends
(see floe table show for the location).

  floe table add-files sales.orders s3://floe/sales/orders-<uuid>/landing/2026-03/`}
	acl := bindIngestClient(add.Flags(), getenv)
	add.RunE = func(c *cobra.Command, args []string) error {
		id, err := tableArg(args[0])
		if err != nil {
			return err
		}
		body, _ := json.Marshal(mgmtapi.AddFilesRequest{Paths: args[1:]})
		var res ingest.Result
		if err := acl.do(c.Context(), "POST", tableURL(acl.wh(), id)+"/add-files", bytes.NewReader(body), int64(len(body)), "application/json", &res); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "added %d files (%d rows, %s) to %s; snapshot %d\n", res.Files, res.Rows, ingestBytes(res.Bytes), res.Table, res.SnapshotID)
		return nil
	}
	reg := &cobra.Command{Use: "register-delta NS.TABLE LOCATION", Args: cobra.ExactArgs(2),
		Short: "Expose a Delta Lake table of the warehouse storage as an Iceberg table, without copying data",
		Long: `Create an Iceberg table over the Delta Lake table at LOCATION (the directory
holding _delta_log, inside the warehouse storage): the Delta log's active
Parquet files become the table's data files, and Iceberg metadata is written
to LOCATION/metadata/. Delta partition columns become identity partitions.
Later Delta commits are not followed.

  floe table register-delta sales.events s3://floe/landing/events_delta`}
	rcl := bindIngestClient(reg.Flags(), getenv)
	reg.RunE = func(c *cobra.Command, args []string) error {
		id, err := tableArg(args[0])
		if err != nil {
			return err
		}
		body, _ := json.Marshal(mgmtapi.RegisterDeltaRequest{Location: args[1]})
		var res ingest.Result
		if err := rcl.do(c.Context(), "POST", tableURL(rcl.wh(), id)+"/register-delta", bytes.NewReader(body), int64(len(body)), "application/json", &res); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "registered %s over %s: %d files, %d rows; snapshot %d\n", res.Table, args[1], res.Files, res.Rows, res.SnapshotID)
		return nil
	}
	table.AddCommand(add, reg)
}

// meter counts the bytes (and, for line formats, the lines) read through it.
type meter struct {
	r     io.Reader
	lines bool
	n     atomic.Int64
	nl    atomic.Int64
}

func (m *meter) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	m.n.Add(int64(n))
	if m.lines {
		m.nl.Add(int64(bytes.Count(p[:n], []byte{'\n'})))
	}
	return n, err
}

// show draws a progress line on w every 200ms until the returned func is
// called: bytes sent (of total when known), and for CSV and NDJSON rows
// and rows/s (counted as lines; the server's count is final).
func (m *meter) show(w io.Writer, total int64) func() {
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	draw := func(final bool) {
		el := time.Since(start).Seconds()
		n := m.n.Load()
		line := "\r" + ingestBytes(n)
		if total > 0 {
			pct := float64(n) / float64(total)
			const width = 24
			bar := strings.Repeat("=", int(pct*width)) + strings.Repeat(" ", width-int(pct*width))
			line = fmt.Sprintf("\r[%s] %3.0f%% %s/%s", bar, 100*pct, ingestBytes(n), ingestBytes(total))
		}
		if el > 0 {
			line += fmt.Sprintf("  %s/s", ingestBytes(int64(float64(n)/el)))
		}
		if m.lines {
			rows := m.nl.Load()
			line += fmt.Sprintf("  ~%d rows  %.0f rows/s", rows, float64(rows)/max(el, 1e-9))
		}
		if final {
			line += "\n"
		}
		fmt.Fprint(w, line+"\x1b[K")
	}
	wg.Go(func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				draw(false)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		draw(true)
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ingestBytes renders a byte count: 512 B, 1.5 KiB, 12.0 MiB ...
func ingestBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
