package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/mgmtapi"
)

// The namespace commands and floe table list|drop|rename talk to a Floe
// server through its Iceberg REST catalog API with the caller's
// credentials, like the ingest commands: the server checks privileges and
// records the audit events.

// listPageSize is the page size of the list commands' requests.
const listPageSize = 1000

// restPath is the REST catalog path of the warehouse wh followed by rest.
func restPath(wh, rest string) string { return "/v1/" + url.PathEscape(wh) + rest }

// nsPath is the REST catalog path of namespace ns in wh.
func nsPath(wh string, ns catalog.Namespace) string {
	return restPath(wh, "/namespaces/"+url.PathEscape(ns.Key()))
}

// namespaceArg reads a namespace given as levels separated by ".".
func namespaceArg(s string) (catalog.Namespace, error) {
	ns := mgmtapi.ParseNamespace(s)
	if len(ns) == 0 {
		return nil, floe.E(floe.Invalid, "namespace", "a namespace is named by its levels separated by '.', e.g. crm or crm.emea (got %q)", s)
	}
	if err := ns.Validate(); err != nil {
		return nil, err
	}
	return ns, nil
}

// propertyArgs reads KEY=VALUE pairs.
func propertyArgs(flag string, kvs []string) (map[string]string, error) {
	props := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, floe.E(floe.Invalid, "property", "%s %q: want KEY=VALUE", flag, kv)
		}
		props[k] = v
	}
	return props, nil
}

// tableIdentJSON is a table identifier as the REST catalog takes it.
type tableIdentJSON struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// listNamespaces lists the namespaces under parent (nil: top level),
// following the pages of the answer.
func listNamespaces(ctx context.Context, cl *ingestClient, parent catalog.Namespace) ([]catalog.Namespace, error) {
	var all []catalog.Namespace
	token := ""
	for {
		q := url.Values{"pageToken": {token}, "pageSize": {fmt.Sprint(listPageSize)}}
		if len(parent) > 0 {
			q.Set("parent", parent.Key())
		}
		var page struct {
			Namespaces    [][]string `json:"namespaces"`
			NextPageToken string     `json:"next-page-token"`
		}
		if err := cl.call(ctx, "GET", restPath(cl.wh(), "/namespaces?"+q.Encode()), nil, &page); err != nil {
			return nil, err
		}
		for _, ns := range page.Namespaces {
			all = append(all, catalog.Namespace(ns))
		}
		if page.NextPageToken == "" || len(page.Namespaces) == 0 {
			return all, nil
		}
		token = page.NextPageToken
	}
}

// listTables lists the tables of ns, following the pages of the answer.
func listTables(ctx context.Context, cl *ingestClient, ns catalog.Namespace) ([]catalog.Ident, error) {
	var all []catalog.Ident
	token := ""
	for {
		q := url.Values{"pageToken": {token}, "pageSize": {fmt.Sprint(listPageSize)}}
		var page struct {
			Identifiers   []tableIdentJSON `json:"identifiers"`
			NextPageToken string           `json:"next-page-token"`
		}
		if err := cl.call(ctx, "GET", nsPath(cl.wh(), ns)+"/tables?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		for _, id := range page.Identifiers {
			all = append(all, catalog.Ident{Namespace: id.Namespace, Name: id.Name})
		}
		if page.NextPageToken == "" || len(page.Identifiers) == 0 {
			return all, nil
		}
		token = page.NextPageToken
	}
}

// createNamespace creates ns with props; with ifMissing an existing
// namespace is no error (created then reports false).
func createNamespace(ctx context.Context, cl *ingestClient, ns catalog.Namespace, props map[string]string, ifMissing bool) (created bool, err error) {
	body := map[string]any{"namespace": []string(ns), "properties": props}
	var out json.RawMessage
	err = cl.call(ctx, "POST", restPath(cl.wh(), "/namespaces"), body, &out)
	if ifMissing && floe.KindOf(err) == floe.AlreadyExists {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return true, nil
}

// ensureNamespace creates ns and its missing parents, for ingest
// --create-namespace. A level is created only when the server says it
// does not exist: a caller allowed to load into an existing namespace's
// table but not to create namespaces is not refused for the attempt (a
// level it may not see is left to the ingest's own privilege check).
func ensureNamespace(ctx context.Context, cl *ingestClient, ns catalog.Namespace) error {
	for i := range ns {
		level := ns[:i+1]
		err := cl.call(ctx, "GET", nsPath(cl.wh(), level), nil, nil)
		if floe.KindOf(err) != floe.NotFound {
			continue
		}
		if _, err := createNamespace(ctx, cl, level, nil, true); err != nil {
			return err
		}
	}
	return nil
}

// namespaceCmd is `floe namespace create|list|show|drop|set-property`.
func namespaceCmd(stdout io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "namespace", Aliases: []string{"ns"}, Short: "Create, list, show and drop namespaces and set their properties (through a Floe server)",
		Long: `Manage the namespaces of a warehouse through a Floe server's Iceberg REST
catalog API, with the caller's credentials (--credential or --token, or
FLOE_CREDENTIAL, FLOE_TOKEN). Nested namespaces are named by their levels
separated by ".", e.g. crm.emea.

  floe namespace create sales --property owner=data-eng
  floe namespace list
  floe namespace show sales
  floe namespace set-property sales comment='Orders and returns' --remove owner
  floe namespace drop sales`}

	create := &cobra.Command{Use: "create NAMESPACE", Args: cobra.ExactArgs(1), Short: "Create a namespace (needs CREATE_NAMESPACE on its parent or the warehouse)"}
	ccl := bindIngestClient(create.Flags(), getenv)
	cprops := create.Flags().StringArray("property", nil, "namespace property KEY=VALUE (repeatable)")
	ifMissing := create.Flags().Bool("if-not-exists", false, "no error when the namespace exists already")
	create.RunE = func(c *cobra.Command, args []string) error {
		ns, err := namespaceArg(args[0])
		if err != nil {
			return err
		}
		props, err := propertyArgs("--property", *cprops)
		if err != nil {
			return err
		}
		created, err := createNamespace(c.Context(), ccl, ns, props, *ifMissing)
		if err != nil {
			return err
		}
		if created {
			fmt.Fprintf(stdout, "created namespace %s\n", ns)
		} else {
			fmt.Fprintf(stdout, "namespace %s exists already\n", ns)
		}
		return nil
	}

	list := &cobra.Command{Use: "list [PARENT]", Args: cobra.MaximumNArgs(1), Short: "List the namespaces of the warehouse, or those under PARENT, that the caller may see"}
	lcl := bindIngestClient(list.Flags(), getenv)
	ljson := list.Flags().Bool("json", false, "print a JSON array of namespaces (each an array of levels)")
	list.RunE = func(c *cobra.Command, args []string) error {
		var parent catalog.Namespace
		if len(args) == 1 {
			var err error
			if parent, err = namespaceArg(args[0]); err != nil {
				return err
			}
		}
		nss, err := listNamespaces(c.Context(), lcl, parent)
		if err != nil {
			return err
		}
		if *ljson {
			if nss == nil {
				nss = []catalog.Namespace{}
			}
			return json.NewEncoder(stdout).Encode(nss)
		}
		for _, ns := range nss {
			fmt.Fprintln(stdout, ns)
		}
		return nil
	}

	show := &cobra.Command{Use: "show NAMESPACE", Args: cobra.ExactArgs(1), Short: "Show a namespace's properties"}
	scl := bindIngestClient(show.Flags(), getenv)
	sjson := show.Flags().Bool("json", false, "print the namespace as JSON")
	show.RunE = func(c *cobra.Command, args []string) error {
		ns, err := namespaceArg(args[0])
		if err != nil {
			return err
		}
		var out struct {
			Namespace  []string          `json:"namespace"`
			Properties map[string]string `json:"properties"`
		}
		if err := scl.call(c.Context(), "GET", nsPath(scl.wh(), ns), nil, &out); err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
		if *sjson {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(out)
		}
		fmt.Fprintf(stdout, "namespace %s\n", catalog.Namespace(out.Namespace))
		keys := make([]string, 0, len(out.Properties))
		for k := range out.Properties {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(stdout, "  %s = %s\n", k, out.Properties[k])
		}
		return nil
	}

	drop := &cobra.Command{Use: "drop NAMESPACE", Args: cobra.ExactArgs(1), Short: "Drop an empty namespace (needs DROP on it)"}
	dcl := bindIngestClient(drop.Flags(), getenv)
	drop.RunE = func(c *cobra.Command, args []string) error {
		ns, err := namespaceArg(args[0])
		if err != nil {
			return err
		}
		if err := dcl.call(c.Context(), "DELETE", nsPath(dcl.wh(), ns), nil, nil); err != nil {
			return fmt.Errorf("drop namespace %s: %w", ns, err)
		}
		fmt.Fprintf(stdout, "dropped namespace %s\n", ns)
		return nil
	}

	setp := &cobra.Command{Use: "set-property NAMESPACE [KEY=VALUE...]", Args: cobra.MinimumNArgs(1),
		Short: "Set (KEY=VALUE or --property) and remove (--remove KEY) namespace properties in one update (needs ALTER on it)"}
	pcl := bindIngestClient(setp.Flags(), getenv)
	pprops := setp.Flags().StringArray("property", nil, "property KEY=VALUE to set (repeatable)")
	premove := setp.Flags().StringArray("remove", nil, "property KEY to remove (repeatable)")
	setp.RunE = func(c *cobra.Command, args []string) error {
		ns, err := namespaceArg(args[0])
		if err != nil {
			return err
		}
		updates, err := propertyArgs("property", append(slices.Clone(*pprops), args[1:]...))
		if err != nil {
			return err
		}
		if len(updates) == 0 && len(*premove) == 0 {
			return floe.E(floe.Invalid, "property", "give properties to set (KEY=VALUE, --property) or to remove (--remove KEY)")
		}
		var out struct {
			Updated []string `json:"updated"`
			Removed []string `json:"removed"`
			Missing []string `json:"missing"`
		}
		body := map[string]any{"updates": updates, "removals": *premove}
		if err := pcl.call(c.Context(), "POST", nsPath(pcl.wh(), ns)+"/properties", body, &out); err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
		fmt.Fprintf(stdout, "namespace %s: set %s; removed %s", ns, listOrNone(out.Updated), listOrNone(out.Removed))
		if len(out.Missing) > 0 {
			fmt.Fprintf(stdout, "; not set, so not removed: %s", strings.Join(out.Missing, ", "))
		}
		fmt.Fprintln(stdout)
		return nil
	}
	cmd.AddCommand(create, list, show, drop, setp)
	return cmd
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}

// addTableCatalogCmds adds list, drop and rename to the `table` command of
// root, creating it if there is none.
func addTableCatalogCmds(root *cobra.Command, stdout io.Writer, getenv func(string) string) {
	table := tableParent(root)
	list := &cobra.Command{Use: "list NAMESPACE", Args: cobra.ExactArgs(1), Short: "List the tables of a namespace that the caller may see"}
	lcl := bindIngestClient(list.Flags(), getenv)
	list.RunE = func(c *cobra.Command, args []string) error {
		ns, err := namespaceArg(args[0])
		if err != nil {
			return err
		}
		ids, err := listTables(c.Context(), lcl, ns)
		if err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
		for _, id := range ids {
			fmt.Fprintln(stdout, id.Namespace.String()+"."+id.Name)
		}
		return nil
	}

	drop := &cobra.Command{Use: "drop NS.TABLE", Args: cobra.ExactArgs(1), Short: "Drop a table (needs DROP on it); --purge also deletes its files",
		Long: `Drop a table from the catalog (needs DROP on it). Without --purge its files
stay in storage, as Iceberg's dropTable leaves them; with --purge Floe deletes
the table's data and metadata files too (see docs/maintenance.md for how purges
run and floe table purges to follow them).

  floe table drop sales.orders
  floe table drop --purge sales.scratch`}
	dcl := bindIngestClient(drop.Flags(), getenv)
	purge := drop.Flags().Bool("purge", false, "delete the table's files too (purgeRequested)")
	drop.RunE = func(c *cobra.Command, args []string) error {
		id, err := tableArg(args[0])
		if err != nil {
			return err
		}
		path := nsPath(dcl.wh(), id.Namespace) + "/tables/" + url.PathEscape(id.Name)
		if *purge {
			path += "?purgeRequested=true"
		}
		if err := dcl.call(c.Context(), "DELETE", path, nil, nil); err != nil {
			return fmt.Errorf("drop table %s: %w", args[0], err)
		}
		if *purge {
			fmt.Fprintf(stdout, "dropped table %s; its files are being deleted (floe table purges lists unfinished purges)\n", args[0])
		} else {
			fmt.Fprintf(stdout, "dropped table %s (its files stay in storage; --purge deletes them)\n", args[0])
		}
		return nil
	}

	rename := &cobra.Command{Use: "rename NS.TABLE NS.NEW_NAME", Args: cobra.ExactArgs(2), Short: "Rename a table or move it to another namespace"}
	rcl := bindIngestClient(rename.Flags(), getenv)
	rename.RunE = func(c *cobra.Command, args []string) error {
		from, err := tableArg(args[0])
		if err != nil {
			return err
		}
		to, err := tableArg(args[1])
		if err != nil {
			return err
		}
		body := map[string]any{
			"source":      tableIdentJSON{Namespace: from.Namespace, Name: from.Name},
			"destination": tableIdentJSON{Namespace: to.Namespace, Name: to.Name},
		}
		if err := rcl.call(c.Context(), "POST", restPath(rcl.wh(), "/tables/rename"), body, nil); err != nil {
			return fmt.Errorf("rename table %s to %s: %w", args[0], args[1], err)
		}
		fmt.Fprintf(stdout, "renamed table %s to %s\n", args[0], args[1])
		return nil
	}
	table.AddCommand(list, drop, rename)
}
