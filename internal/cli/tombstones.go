package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/mgmtapi"
)

// tombstonesURL is the management API path of a warehouse's tombstones.
func tombstonesURL(wh string) string {
	return "/api/v1/warehouses/" + url.PathEscape(wh) + "/tombstones"
}

// operatorClaimant is who the CLI acts for in process: the operator, an
// administrator.
func operatorClaimant() catalog.Claimant { return catalog.Claimant{Admin: true} }

// localTombstone is the wire form of t, with its owner's name from the
// store of a.
func localTombstone(c *cobra.Command, a *app.App, t catalog.Tombstone) mgmtapi.Tombstone {
	owner := t.Owner
	if owner != "" {
		if ps, err := a.Store().ListPrincipals(c.Context()); err == nil {
			for _, p := range ps {
				if p.ID == owner {
					owner = p.Name
				}
			}
		}
	}
	return mgmtapi.Tombstone{Location: t.Location, Table: t.Ident.String(), Namespace: []string(t.Ident.Namespace),
		Name: t.Ident.Name, Owner: owner, DroppedAt: t.DroppedAt.UTC()}
}

// tombstonesCmd is `floe table tombstones`.
func tombstonesCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "tombstones", Args: cobra.NoArgs,
		Short: "List the kept locations of dropped tables (yours; all of them for an administrator)",
		Long: `List the tombstones of the warehouse: the locations of tables dropped
without purge (or unregistered), which no one but the tombstone's owner or
an administrator may reuse. See docs/security.md.

With --url an administrator sees every tombstone, anyone else the ones it
owns; otherwise this command opens the data directory and lists them all,
as the operator.`}
	load := configFlags(cmd.Flags(), getenv)
	srv := bindAPIClient(cmd.Flags(), getenv, "", serverURLHelp)
	asJSON := cmd.Flags().Bool("json", false, "print the tombstones as JSON")
	cmd.RunE = func(c *cobra.Command, _ []string) error {
		var all []mgmtapi.Tombstone
		err := srv.orLocal(c, load, stderr,
			func(wh string) error {
				token := ""
				for {
					var page mgmtapi.Tombstones
					q := url.Values{"page_size": {fmt.Sprint(mgmtapi.MaxTombstonePage)}}
					if token != "" {
						q.Set("page_token", token)
					}
					if err := srv.call(c.Context(), "GET", tombstonesURL(wh)+"?"+q.Encode(), nil, &page); err != nil {
						return err
					}
					all = append(all, page.Tombstones...)
					if token = page.NextPageToken; token == "" {
						return nil
					}
				}
			},
			func(a *app.App) error {
				ctx := catalog.WithClaimant(c.Context(), operatorClaimant())
				ts, err := a.Catalog().Tombstones(ctx, a.Config().Warehouse)
				for _, t := range ts {
					all = append(all, localTombstone(c, a, t))
				}
				return err
			})
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(mgmtapi.Tombstones{Tombstones: append([]mgmtapi.Tombstone{}, all...)})
		}
		if len(all) == 0 {
			fmt.Fprintln(stdout, "no tombstones")
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "LOCATION\tDROPPED TABLE\tOWNER\tDROPPED AT")
		for _, t := range all {
			owner := t.Owner
			if owner == "" {
				owner = "(administrators)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Location, t.Table, owner, t.DroppedAt.Format(time.RFC3339))
		}
		return tw.Flush()
	}
	return cmd
}

// releaseLocationCmd is `floe table release-location LOCATION`.
func releaseLocationCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "release-location LOCATION", Args: cobra.ExactArgs(1),
		Short: "Release the kept location of a dropped table (its owner or an administrator); the files stay",
		Long: `Remove the tombstone at LOCATION (as floe table tombstones lists it), so
that the location is no longer claimed by the dropped table. The files stay:
delete them first if they must not be reused. A non-administrator may then
create a table there only if no object lies under it.

With --url the server checks that the caller owns the tombstone or is an
administrator; otherwise this command opens the data directory and releases
it as the operator. Audited as mgmt.tombstone.release.`}
	load := configFlags(cmd.Flags(), getenv)
	srv := bindAPIClient(cmd.Flags(), getenv, "", serverURLHelp)
	cmd.RunE = func(c *cobra.Command, args []string) error {
		var t mgmtapi.Tombstone
		err := srv.orLocal(c, load, stderr,
			func(wh string) error {
				return srv.call(c.Context(), "DELETE", tombstonesURL(wh)+"?location="+url.QueryEscape(args[0]), nil, &t)
			},
			func(a *app.App) error {
				ctx := catalog.WithClaimant(c.Context(), operatorClaimant())
				wh := a.Config().Warehouse
				ct, err := a.Catalog().ReleaseTombstone(ctx, wh, args[0])
				loc := ct.Location
				if loc == "" {
					loc = args[0]
				}
				record(c.Context(), a, "mgmt.tombstone.release", "location:"+wh+"/"+loc,
					map[string]any{"table": ct.Ident.String(), "owner_id": ct.Owner}, err)
				t = localTombstone(c, a, ct)
				return err
			})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "released %s (dropped table %s); its files were kept\n", t.Location, t.Table)
		return nil
	}
	return cmd
}
