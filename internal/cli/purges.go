package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
)

// PurgeJob is one pending purge as `floe table purges --json` prints it.
type PurgeJob struct {
	Warehouse        string    `json:"warehouse"`
	Location         string    `json:"location"`
	Table            string    `json:"table"`
	MetadataLocation string    `json:"metadata-location"`
	MetadataDone     int       `json:"metadata-files-done"`
	Attempts         int       `json:"failed-attempts"`
	LastError        string    `json:"last-error,omitempty"`
	Running          bool      `json:"running"`
	DroppedAt        time.Time `json:"dropped-at"`
}

// purgesCmd is `floe table purges`.
func purgesCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "purges", Args: cobra.NoArgs,
		Short: "List the dropped tables whose files are still being deleted (pending purge jobs)",
		Long: `List the pending purge jobs of every warehouse: tables dropped with purge
whose files the purge worker is still deleting (or retrying after an
error). Until its job is done, a location cannot be reused. This command
opens the data directory (or the store) as the operator. See
docs/maintenance.md, "Purge".`}
	load := configFlags(cmd.Flags(), getenv)
	asJSON := cmd.Flags().Bool("json", false, "print the jobs as JSON")
	cmd.RunE = func(c *cobra.Command, _ []string) error {
		a, err := openApp(c, load, stderr)
		if err != nil {
			return err
		}
		defer a.Close(c.Context())
		jobs, err := a.Catalog().PurgeJobs(catalog.WithClaimant(c.Context(), operatorClaimant()), "", 0)
		if err != nil {
			return err
		}
		now := time.Now()
		out := make([]PurgeJob, 0, len(jobs))
		for _, j := range jobs {
			out = append(out, PurgeJob{Warehouse: j.Warehouse, Location: j.Location, Table: j.Ident.String(),
				MetadataLocation: j.MetadataLocation, MetadataDone: j.Done, Attempts: j.Attempts, LastError: j.LastError,
				Running: j.Holder != "" && j.Expires.After(now), DroppedAt: j.CreatedAt.UTC()})
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(map[string][]PurgeJob{"purges": out})
		}
		if len(out) == 0 {
			fmt.Fprintln(stdout, "no pending purges")
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "LOCATION\tDROPPED TABLE\tDROPPED AT\tSTATE\tFAILED ATTEMPTS\tLAST ERROR")
		for _, j := range out {
			state := "waiting"
			if j.Running {
				state = "running"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", j.Location, j.Table, j.DroppedAt.Format(time.RFC3339), state, j.Attempts, j.LastError)
		}
		return tw.Flush()
	}
	return cmd
}

// purgeFlags binds the purge settings of `floe serve`.
func purgeFlags(fs *pflag.FlagSet) func(*app.Config) {
	def := app.Defaults().Purge
	every := fs.Duration("purge-interval", def.Interval, "how often the purge worker looks for pending purge jobs of dropped tables (env FLOE_PURGE_INTERVAL)")
	inline := fs.Int("purge-inline-files", def.InlineFiles, "files a drop with purge deletes before it answers; the rest in the background; 0 = all in the background (env FLOE_PURGE_INLINE_FILES)")
	ttl := fs.Duration("purge-lease-ttl", def.LeaseTTL, "how long a purge run holds its job without renewal; after a crash the job resumes once it expires (env FLOE_PURGE_LEASE_TTL)")
	batch := fs.Int("purge-batch", def.Batch, "files a purge deletes between two checkpoints (env FLOE_PURGE_BATCH)")
	return func(cfg *app.Config) {
		p := &cfg.Purge
		for name, set := range map[string]func(){
			"purge-interval":     func() { p.Interval = *every },
			"purge-inline-files": func() { p.InlineFiles = *inline },
			"purge-lease-ttl":    func() { p.LeaseTTL = *ttl },
			"purge-batch":        func() { p.Batch = *batch },
		} {
			if fs.Changed(name) {
				set()
			}
		}
	}
}
