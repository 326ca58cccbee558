package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/mgmtapi"
	"github.com/floe-lake/floe/udf"
)

// The function commands manage user-defined functions (Iceberg UDF
// metadata) through a Floe server: writes through the management API,
// reads through the REST catalog's listFunctions and loadFunction.

// functionURL is the management API path of function id.
func functionURL(wh string, id catalog.Ident) string {
	return "/api/v1/functions/" + url.PathEscape(wh) + "/" + url.PathEscape(strings.Join(id.Namespace, catalog.Sep)) + "/" + url.PathEscape(id.Name)
}

// functionArg reads NS.FUNCTION.
func functionArg(s string) (catalog.Ident, error) {
	levels := mgmtapi.ParseNamespace(s)
	if len(levels) < 2 {
		return catalog.Ident{}, floe.E(floe.Invalid, "function", "a function is named namespace.name, e.g. analytics.add_one (got %q)", s)
	}
	id := catalog.Ident{Namespace: levels[:len(levels)-1], Name: levels[len(levels)-1]}
	return id, id.Validate()
}

// readMetadataFile reads FunctionMetadata JSON from path ("-": stdin).
func readMetadataFile(path string, stdin io.Reader) (json.RawMessage, error) {
	if path == "" {
		return nil, floe.E(floe.Invalid, "", "--file is required: the function's metadata in the Iceberg UDF format (- for standard input)")
	}
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(stdin, mgmtapi.MaxBodyBytes+1))
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !json.Valid(b) {
		return nil, floe.E(floe.Invalid, "", "%s is not JSON", path)
	}
	return b, nil
}

// functionCmd is `floe function create|replace|drop|list|show`.
func functionCmd(stdout io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "function", Aliases: []string{"functions"}, Short: "Create, replace, drop, list and show user-defined functions (through a Floe server)",
		Long: `Manage the user-defined functions of a namespace, stored as Iceberg UDF
metadata and served by the REST catalog's listFunctions and loadFunction.
Writes need CREATE_VIEW on the namespace, reads DESCRIBE on it.

  floe function create analytics.add_one --file add_one.json
  floe function replace analytics.add_one --file add_one.json --if-match s3://.../00000-....metadata.json
  floe function list analytics
  floe function show analytics.add_one
  floe function drop analytics.add_one`}

	put := func(use, short, mode string) *cobra.Command {
		c := &cobra.Command{Use: use + " NS.FUNCTION --file METADATA.json", Args: cobra.ExactArgs(1), Short: short}
		cl := bindIngestClient(c.Flags(), getenv)
		file := c.Flags().String("file", "", "the function's metadata (Iceberg UDF format, JSON); - reads standard input")
		var ifMatch *string
		if mode == "replace" {
			ifMatch = c.Flags().String("if-match", "", "replace only if the function's metadata-location is still this one")
		}
		c.RunE = func(cc *cobra.Command, args []string) error {
			id, err := functionArg(args[0])
			if err != nil {
				return err
			}
			body, err := readMetadataFile(*file, cc.InOrStdin())
			if err != nil {
				return err
			}
			q := url.Values{"mode": {mode}}
			if ifMatch != nil && *ifMatch != "" {
				q.Set("if-match", *ifMatch)
			}
			var res mgmtapi.FunctionResult
			if err := cl.call(cc.Context(), "PUT", functionURL(cl.wh(), id)+"?"+q.Encode(), body, &res); err != nil {
				return fmt.Errorf("%s function %s: %w", mode, id, err)
			}
			verb := "created"
			if mode == "replace" {
				verb = "replaced"
			}
			fmt.Fprintf(stdout, "%s function %s (metadata %s)\n", verb, id, res.MetadataLocation)
			return nil
		}
		return c
	}
	create := put("create", "Create a function from its Iceberg UDF metadata (needs CREATE_VIEW on the namespace)", "create")
	replace := put("replace", "Replace a function's metadata (same function-uuid; needs CREATE_VIEW on the namespace)", "replace")

	drop := &cobra.Command{Use: "drop NS.FUNCTION", Args: cobra.ExactArgs(1), Short: "Drop a function (needs CREATE_VIEW on the namespace; its files stay)"}
	dcl := bindIngestClient(drop.Flags(), getenv)
	drop.RunE = func(c *cobra.Command, args []string) error {
		id, err := functionArg(args[0])
		if err != nil {
			return err
		}
		if err := dcl.call(c.Context(), "DELETE", functionURL(dcl.wh(), id), nil, nil); err != nil {
			return fmt.Errorf("drop function %s: %w", id, err)
		}
		fmt.Fprintf(stdout, "dropped function %s\n", id)
		return nil
	}

	list := &cobra.Command{Use: "list NAMESPACE", Args: cobra.ExactArgs(1), Short: "List the functions of a namespace (needs DESCRIBE on it)"}
	lcl := bindIngestClient(list.Flags(), getenv)
	list.RunE = func(c *cobra.Command, args []string) error {
		ns, err := namespaceArg(args[0])
		if err != nil {
			return err
		}
		token := ""
		for {
			q := url.Values{"pageToken": {token}, "pageSize": {fmt.Sprint(listPageSize)}}
			var page struct {
				Identifiers   [][]string `json:"identifiers"`
				NextPageToken string     `json:"next-page-token"`
			}
			if err := lcl.call(c.Context(), "GET", nsPath(lcl.wh(), ns)+"/functions?"+q.Encode(), nil, &page); err != nil {
				return fmt.Errorf("namespace %s: %w", ns, err)
			}
			for _, id := range page.Identifiers {
				fmt.Fprintln(stdout, strings.Join(id, "."))
			}
			if page.NextPageToken == "" || len(page.Identifiers) == 0 {
				return nil
			}
			token = page.NextPageToken
		}
	}

	show := &cobra.Command{Use: "show NS.FUNCTION", Args: cobra.ExactArgs(1), Short: "Show a function's definitions (needs DESCRIBE on the namespace)"}
	scl := bindIngestClient(show.Flags(), getenv)
	sjson := show.Flags().Bool("json", false, "print the REST catalog's LoadFunctionResult")
	show.RunE = func(c *cobra.Command, args []string) error {
		id, err := functionArg(args[0])
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := scl.call(c.Context(), "GET", nsPath(scl.wh(), id.Namespace)+"/functions/"+url.PathEscape(id.Name), nil, &raw); err != nil {
			return fmt.Errorf("function %s: %w", id, err)
		}
		if *sjson {
			_, err := fmt.Fprintf(stdout, "%s\n", raw)
			return err
		}
		var res struct {
			Location string          `json:"metadata-location"`
			Metadata json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return err
		}
		md, err := udf.Parse(res.Metadata)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "function %s (uuid %s, secure %t)\n  metadata %s\n", id, md.FunctionUUID, md.Secure, res.Location)
		if md.Doc != "" {
			fmt.Fprintf(stdout, "  %s\n", md.Doc)
		}
		for _, d := range md.Definitions {
			names := make([]string, len(d.Parameters))
			for i, p := range d.Parameters {
				names[i] = p.Name
			}
			ret, _ := json.Marshal(d.ReturnType)
			var dialects []string
			for _, v := range d.Versions {
				if v.VersionID != nil && *v.VersionID == *d.CurrentVersionID {
					for _, r := range v.Representations {
						dialects = append(dialects, r.Dialect)
					}
				}
			}
			fmt.Fprintf(stdout, "  %s(%s) [%s] %s -> %s, version %d of %d, dialects %s\n", id.Name, strings.Join(names, ", "), d.DefinitionID,
				d.FunctionType, ret, *d.CurrentVersionID, len(d.Versions), strings.Join(dialects, ", "))
		}
		return nil
	}
	cmd.AddCommand(create, replace, drop, list, show)
	return cmd
}
