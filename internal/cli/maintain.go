package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/maint"
	"github.com/floe-lake/floe/mgmtapi"
)

// serverFlags are the flags of a command that can run through a Floe
// server's management API instead of opening the store itself.
type serverFlags struct {
	url, token, credential string
	getenv                 func(string) string
}

func bindServerFlags(fs *pflag.FlagSet, getenv func(string) string) *serverFlags {
	s := &serverFlags{getenv: getenv}
	fs.StringVar(&s.url, "url", "", "run through the Floe server at this URL (env FLOE_URL) instead of opening the data directory")
	fs.StringVar(&s.token, "token", "", "bearer token for --url (env FLOE_TOKEN)")
	fs.StringVar(&s.credential, "credential", "", "client_id:client_secret to obtain a token for --url (env FLOE_CREDENTIAL)")
	return s
}

// remote reports whether the command talks to a server.
func (s *serverFlags) remote() bool { return s.base() != "" }

func (s *serverFlags) base() string {
	u := s.url
	if u == "" {
		u = s.getenv("FLOE_URL")
	}
	return strings.TrimSuffix(u, "/")
}

// bearer returns the token to send: --token, FLOE_TOKEN, or one obtained
// with the client credentials of --credential or FLOE_CREDENTIAL.
func (s *serverFlags) bearer(ctx context.Context, hc *http.Client) (string, error) {
	if s.token != "" {
		return s.token, nil
	}
	if t := s.getenv("FLOE_TOKEN"); t != "" {
		return t, nil
	}
	cred := s.credential
	if cred == "" {
		cred = s.getenv("FLOE_CREDENTIAL")
	}
	id, secret, ok := strings.Cut(cred, ":")
	if !ok {
		return "", floe.E(floe.Invalid, "", "--url needs --token or --credential client_id:client_secret (or FLOE_TOKEN, FLOE_CREDENTIAL)")
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {"catalog"}}
	req, err := http.NewRequestWithContext(ctx, "POST", s.base()+"/v1/oauth/tokens", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("token request: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil || resp.StatusCode != 200 || out.AccessToken == "" {
		return "", fmt.Errorf("token request: status %d", resp.StatusCode)
	}
	return out.AccessToken, nil
}

// call sends a management API request and decodes the answer into out.
func (s *serverFlags) call(ctx context.Context, method, path string, body, out any) error {
	hc := &http.Client{Timeout: time.Hour}
	tok, err := s.bearer(ctx, hc)
	if err != nil {
		return err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base()+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("%s (HTTP %d)", e.Error.Message, resp.StatusCode)
		}
		return fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, data)
	}
	return json.Unmarshal(data, out)
}

// tablePath is /api/v1/tables/<wh>/<ns>/<table>.
func tablePath(wh string, id catalog.Ident) string {
	return "/api/v1/tables/" + url.PathEscape(wh) + "/" + url.PathEscape(strings.Join(id.Namespace, catalog.Sep)) + "/" + url.PathEscape(id.Name)
}

// parseTableArg reads NS.TABLE (levels separated by ".").
func parseTableArg(s string) (catalog.Ident, error) {
	levels := mgmtapi.ParseNamespace(s)
	if len(levels) < 2 {
		return catalog.Ident{}, floe.E(floe.Invalid, "table", "a table is named namespace.name, e.g. crm.accounts (got %q)", s)
	}
	id := catalog.Ident{Namespace: levels[:len(levels)-1], Name: levels[len(levels)-1]}
	return id, id.Validate()
}

// maintainCmd is `floe maintain NS.TABLE`.
func maintainCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "maintain NS.TABLE", Args: cobra.ExactArgs(1),
		Short: "Run table maintenance now: compaction, manifest rewriting, snapshot expiry, orphan removal",
		Long: `Run maintenance on one table now, whatever its schedule, and report what each
job did. With no job flag, every job runs, in the order --compact,
--manifests, --expire, --orphans. The table's maintenance policy (table and
namespace properties, see docs/maintenance.md) still applies.

With --url the work is done by that server (MODIFY on the table required);
otherwise this command opens the data directory and does it in process, as
the operator.`}
	load := configFlags(cmd.Flags(), getenv)
	srv := bindServerFlags(cmd.Flags(), getenv)
	var req maint.Request
	cmd.Flags().BoolVar(&req.Compact, "compact", false, "bin-pack small data files per partition, applying delete files")
	cmd.Flags().BoolVar(&req.Manifests, "manifests", false, "merge many small manifests")
	cmd.Flags().BoolVar(&req.Expire, "expire", false, "expire old snapshots (never the current one, a branch head or a tag)")
	cmd.Flags().BoolVar(&req.Orphans, "orphans", false, "remove unreferenced files older than the safety window")
	cmd.Flags().BoolVar(&req.DryRun, "dry-run", false, "report what would be done; change nothing")
	asJSON := cmd.Flags().Bool("json", false, "print the reports as JSON")
	cmd.RunE = func(c *cobra.Command, args []string) error {
		id, err := parseTableArg(args[0])
		if err != nil {
			return err
		}
		var res mgmtapi.MaintenanceResult
		if srv.remote() {
			cfg, err := load()
			if err != nil {
				return err
			}
			if err := srv.call(c.Context(), "POST", tablePath(cfg.Warehouse, id)+"/maintenance", req, &res); err != nil {
				return err
			}
		} else {
			a, err := openApp(c, load, stderr)
			if err != nil {
				return err
			}
			defer a.Close(context.Background())
			reports, err := a.Maintainer().Maintain(c.Context(), a.Config().Warehouse, id, req)
			record(c.Context(), a, "mgmt.table.maintain", "table:"+a.Config().Warehouse+"/"+id.String(),
				map[string]any{"compact": req.Compact, "expire": req.Expire, "orphans": req.Orphans, "manifests": req.Manifests, "dry_run": req.DryRun}, err)
			if err != nil {
				return err
			}
			res = mgmtapi.MaintenanceResult{Table: id.String(), Reports: reports}
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		}
		for _, r := range res.Reports {
			fmt.Fprintf(stdout, "%-18s %s\n", r.Job+":", r.Summary)
			for _, f := range r.Files {
				fmt.Fprintf(stdout, "%-18s   %s\n", "", f)
			}
		}
		return nil
	}
	return cmd
}

// tableCmd is `floe table show NS.TABLE`.
func tableCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "table", Short: "Inspect tables"}
	show := &cobra.Command{Use: "show NS.TABLE", Args: cobra.ExactArgs(1),
		Short: "Show a table's snapshots, files per partition, file sizes, maintenance policy and recent maintenance"}
	load := configFlags(show.Flags(), getenv)
	srv := bindServerFlags(show.Flags(), getenv)
	asJSON := show.Flags().Bool("json", false, "print the description as JSON")
	show.RunE = func(c *cobra.Command, args []string) error {
		id, err := parseTableArg(args[0])
		if err != nil {
			return err
		}
		var info maint.TableInfo
		if srv.remote() {
			cfg, err := load()
			if err != nil {
				return err
			}
			if err := srv.call(c.Context(), "GET", tablePath(cfg.Warehouse, id)+"/summary", nil, &info); err != nil {
				return err
			}
		} else {
			a, err := openApp(c, load, stderr)
			if err != nil {
				return err
			}
			defer a.Close(context.Background())
			if info, err = a.Maintainer().Show(c.Context(), a.Config().Warehouse, id); err != nil {
				return err
			}
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(info)
		}
		return printTableInfo(stdout, info)
	}
	cmd.AddCommand(show)
	return cmd
}

// printTableInfo renders a table description for a terminal.
func printTableInfo(w io.Writer, info maint.TableInfo) error {
	fmt.Fprintf(w, "Table %s (warehouse %s), format v%d\n  location: %s\n  metadata: %s\n\n",
		info.Table, info.Warehouse, info.FormatVersion, info.Location, info.MetadataLocation)
	fmt.Fprintf(w, "Current snapshot %d: %d data files (%d records, %s), %d delete files, %d data manifests\n\n",
		info.CurrentSnapshotID, info.DataFiles, info.Records, humanBytes(info.Bytes), info.DeleteFiles, info.DataManifests)

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "SNAPSHOTS (%d)\tTIME\tOPERATION\tREFS\tADDED FILES\tTOTAL FILES\tTOTAL RECORDS\n", info.SnapshotCount)
	for _, s := range info.Snapshots {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Timestamp.Format(time.RFC3339), s.Operation, strings.Join(s.Refs, ","),
			dash(s.Summary["added-data-files"]), dash(s.Summary["total-data-files"]), dash(s.Summary["total-records"]))
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t")
	fmt.Fprintln(tw, "PARTITION\tDATA FILES\tDELETE FILES\tRECORDS\tSIZE\tAVG FILE\t")
	for _, p := range info.Partitions {
		avg := int64(0)
		if p.DataFiles > 0 {
			avg = p.Bytes / p.DataFiles
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t\n", p.Partition, p.DataFiles, p.DeleteFiles, p.Records, humanBytes(p.Bytes), humanBytes(avg))
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t")
	fmt.Fprintln(tw, "FILE SIZE\tDATA FILES\t\t\t\t\t")
	for _, b := range info.SizeHistogram {
		label := fmt.Sprintf("%s – %s", humanBytes(b.Min), humanBytes(b.Max))
		if b.Max == 0 {
			label = ">= " + humanBytes(b.Min)
		}
		fmt.Fprintf(tw, "%s\t%d\t\t\t\t\t\n", label, b.Files)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	p := info.Policy
	fmt.Fprintf(w, "\nPolicy: compaction %s (target %s, min %d files); snapshot expiry %s (max age %s, keep %d); orphan removal %s (older than %s); manifest rewrite %s (from %d manifests)\n",
		onOff(p.CompactionEnabled), humanBytes(p.TargetFileSize), p.MinInputFiles, onOff(p.ExpireEnabled), p.MaxSnapshotAge, p.MinSnapshotsToKeep,
		onOff(p.OrphanEnabled), p.OrphanMinAge, onOff(p.ManifestsEnabled), p.MinManifests)
	fmt.Fprintln(w, "\nRecent maintenance:")
	if len(info.Runs) == 0 {
		fmt.Fprintln(w, "  none recorded")
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  STARTED\tJOB\tOUTCOME\tNODE\tDETAIL")
	for _, r := range info.Runs {
		node := r.Node
		if r.OnDemand {
			node += " (on demand)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", r.Started.Format(time.RFC3339), r.Job, r.Outcome, node, r.Detail)
	}
	return tw.Flush()
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Interface guard: the App's maintainer serves the CLI in process.
var _ interface {
	Maintainer() *maint.Maintainer
} = (*app.App)(nil)
