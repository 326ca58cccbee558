package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/maint"
	"github.com/floe-lake/floe/mgmtapi"
)

// serverURLHelp describes --url of commands that otherwise work in process.
const serverURLHelp = "run through the Floe server at this URL (env FLOE_URL) instead of opening the data directory"

// maintainCmd is `floe maintain NS.TABLE`.
func maintainCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "maintain NS.TABLE", Args: cobra.ExactArgs(1),
		Short: "Run table maintenance now: compaction, manifest rewriting, snapshot expiry, orphan removal, lifecycle",
		Long: `Run maintenance on one table now, whatever its schedule, and report what each
job did. With no job flag, every job runs, in the order --compact,
--manifests, --expire, --orphans, --lifecycle. The table's maintenance policy (table and
namespace properties, see docs/maintenance.md) still applies.

With --url the work is done by that server (MODIFY on the table required);
otherwise this command opens the data directory and does it in process, as
the operator.`}
	load := configFlags(cmd.Flags(), getenv)
	srv := bindAPIClient(cmd.Flags(), getenv, "", serverURLHelp)
	var req maint.Request
	cmd.Flags().BoolVar(&req.Compact, "compact", false, "bin-pack small data files per partition, applying delete files")
	cmd.Flags().BoolVar(&req.Manifests, "manifests", false, "merge many small manifests")
	cmd.Flags().BoolVar(&req.Expire, "expire", false, "expire old snapshots (never the current one, a branch head or a tag)")
	cmd.Flags().BoolVar(&req.Orphans, "orphans", false, "remove unreferenced files older than the safety window")
	cmd.Flags().BoolVar(&req.Lifecycle, "lifecycle", false, "move files only old snapshots reference to the cold tier (floe.lifecycle.cold-after)")
	cmd.Flags().BoolVar(&req.DryRun, "dry-run", false, "report what would be done; change nothing")
	asJSON := cmd.Flags().Bool("json", false, "print the reports as JSON")
	cmd.RunE = func(c *cobra.Command, args []string) error {
		id, err := tableArg(args[0])
		if err != nil {
			return err
		}
		var res mgmtapi.MaintenanceResult
		err = srv.orLocal(c, load, stderr,
			func(wh string) error {
				return srv.call(c.Context(), "POST", tableURL(wh, id)+"/maintenance", req, &res)
			},
			func(a *app.App) error {
				reports, err := a.Maintainer().Maintain(c.Context(), a.Config().Warehouse, id, req)
				record(c.Context(), a, "mgmt.table.maintain", "table:"+a.Config().Warehouse+"/"+id.String(),
					map[string]any{"compact": req.Compact, "expire": req.Expire, "orphans": req.Orphans, "manifests": req.Manifests, "lifecycle": req.Lifecycle, "dry_run": req.DryRun}, err)
				res = mgmtapi.MaintenanceResult{Table: id.String(), Reports: reports}
				return err
			})
		if err != nil {
			return err
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

// tableCmd is `floe table show NS.TABLE`, `floe table tombstones` and
// `floe table release-location LOCATION`.
func tableCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "table", Short: "Inspect tables and the kept locations of dropped ones"}
	show := &cobra.Command{Use: "show NS.TABLE", Args: cobra.ExactArgs(1),
		Short: "Show a table's snapshots, files per partition, file sizes, maintenance policy and recent maintenance"}
	load := configFlags(show.Flags(), getenv)
	srv := bindAPIClient(show.Flags(), getenv, "", serverURLHelp)
	asJSON := show.Flags().Bool("json", false, "print the description as JSON")
	show.RunE = func(c *cobra.Command, args []string) error {
		id, err := tableArg(args[0])
		if err != nil {
			return err
		}
		var info maint.TableInfo
		err = srv.orLocal(c, load, stderr,
			func(wh string) error {
				return srv.call(c.Context(), "GET", tableURL(wh, id)+"/summary", nil, &info)
			},
			func(a *app.App) (err error) {
				info, err = a.Maintainer().Show(c.Context(), a.Config().Warehouse, id)
				return err
			})
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(info)
		}
		return printTableInfo(stdout, info)
	}
	cmd.AddCommand(show, tombstonesCmd(stdout, stderr, getenv), releaseLocationCmd(stdout, stderr, getenv))
	cmd.AddCommand(purgesCmd(stdout, stderr, getenv))
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
