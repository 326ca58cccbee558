package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/mgmtapi"
	"github.com/floe-lake/floe/products"
)

// The data product commands run through a Floe server's management API
// with the caller's credentials: publishing needs ALTER on the product's
// outputs, checks run with the caller's rights.

func productPath(name string, rest ...string) string {
	p := "/api/v1/products/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// withWarehouse adds ?warehouse= when wh is set.
func withWarehouse(path, wh string, more url.Values) string {
	q := url.Values{}
	for k, v := range more {
		q[k] = v
	}
	if wh != "" {
		q.Set("warehouse", wh)
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// maxProductFile bounds a product definition file.
const maxProductFile = 1 << 20

// readProduct reads a product definition from a YAML or JSON file ("-":
// stdin). Field names are those of the management API (snake_case); an
// unknown field is an error.
func readProduct(path string, stdin io.Reader) (products.Product, error) {
	var p products.Product
	var r io.Reader = stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return p, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxProductFile+1))
	if err != nil {
		return p, err
	}
	if len(b) > maxProductFile {
		return p, floe.E(floe.Invalid, "data product", "%s is larger than %d bytes", path, maxProductFile)
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return p, floe.E(floe.Invalid, "data product", "%s is not YAML or JSON: %v", path, err)
	}
	j, err := json.Marshal(doc)
	if err != nil {
		return p, floe.E(floe.Invalid, "data product", "%s: %v", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, floe.E(floe.Invalid, "data product", "%s: %v", path, err)
	}
	return p, nil
}

func productCmd(stdout io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "product", Short: "Manage data products: curated outputs with business context, metrics and quality expectations (docs/products.md)"}

	create := &cobra.Command{Use: "create FILE", Short: "Publish a data product from a YAML or JSON definition (FILE - reads stdin)",
		Long: `Publish a data product. The definition names the product, its owner and
outputs (tables and views), and may add a domain, description, glossary
terms, column docs, metrics and expectations (docs/products.md). Publishing
needs ALTER on every output. With --replace, the definition becomes the
product's next version.`,
		Example: `  floe product create sales_pipeline.yaml
  floe product create sales_pipeline.yaml --replace`,
		Args: cobra.ExactArgs(1)}
	ccl := bindAPIClient(create.Flags(), getenv, DefaultURL, connHelp)
	replace := create.Flags().Bool("replace", false, "publish as the next version of an existing product")
	create.RunE = func(c *cobra.Command, args []string) error {
		p, err := readProduct(args[0], c.InOrStdin())
		if err != nil {
			return err
		}
		var out products.Product
		if *replace {
			var cur products.Product
			if err := ccl.call(c.Context(), "GET", withWarehouse(productPath(p.Name), p.Warehouse, nil), nil, &cur); err != nil {
				return err
			}
			p.Version = cur.Version
			err = ccl.call(c.Context(), "PUT", productPath(p.Name), p, &out)
		} else {
			err = ccl.call(c.Context(), "POST", "/api/v1/products", p, &out)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "published data product %q version %d (%d outputs, %d metrics, %d expectations)\n",
			out.Name, out.Version, len(out.Outputs), len(out.Metrics), len(out.Expectations))
		return nil
	}

	list := &cobra.Command{Use: "list", Short: "List the data products you can see", Args: cobra.NoArgs}
	lcl := bindAPIClient(list.Flags(), getenv, DefaultURL, connHelp)
	lwh := list.Flags().String("warehouse", "", "warehouse (default the server's)")
	ljson := list.Flags().Bool("json", false, "print JSON")
	list.RunE = func(c *cobra.Command, _ []string) error {
		var ls mgmtapi.ProductList
		if err := lcl.call(c.Context(), "GET", withWarehouse("/api/v1/products", *lwh, nil), nil, &ls); err != nil {
			return err
		}
		if *ljson {
			return printJSON(stdout, ls)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tVERSION\tDOMAIN\tOWNER\tOUTPUTS\tDESCRIPTION")
		for _, p := range ls.Products {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", p.Name, p.Version, p.Domain, p.Owner, outputNames(p), oneLine(p.Description, 60))
		}
		return tw.Flush()
	}

	show := &cobra.Command{Use: "show NAME", Short: "Show a data product: context, outputs, metrics, expectations", Args: cobra.ExactArgs(1)}
	scl := bindAPIClient(show.Flags(), getenv, DefaultURL, connHelp)
	swh := show.Flags().String("warehouse", "", "warehouse (default the server's)")
	sver := show.Flags().Int("version", 0, "show this version (default the current one)")
	sversions := show.Flags().Bool("versions", false, "list the kept versions instead")
	sjson := show.Flags().Bool("json", false, "print JSON")
	show.RunE = func(c *cobra.Command, args []string) error {
		if *sversions {
			var ls mgmtapi.ProductList
			if err := scl.call(c.Context(), "GET", withWarehouse(productPath(args[0], "versions"), *swh, nil), nil, &ls); err != nil {
				return err
			}
			if *sjson {
				return printJSON(stdout, ls)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tPUBLISHED\tBY\tOUTPUTS")
			for _, p := range ls.Products {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", p.Version, p.UpdatedAt.Format(time.RFC3339), p.UpdatedBy, outputNames(p))
			}
			return tw.Flush()
		}
		q := url.Values{}
		if *sver > 0 {
			q.Set("version", fmt.Sprint(*sver))
		}
		var p products.Product
		if err := scl.call(c.Context(), "GET", withWarehouse(productPath(args[0]), *swh, q), nil, &p); err != nil {
			return err
		}
		if *sjson {
			return printJSON(stdout, p)
		}
		printProduct(stdout, p)
		return nil
	}

	check := &cobra.Command{Use: "check NAME", Short: "Evaluate a data product's expectations now (exit 1 when one fails)",
		Long: `Evaluate every expectation of the product's current version with your
rights, store the run in the product's history and print it. The exit
status is 0 when every expectation passes, 1 otherwise. With --history,
print the newest stored runs instead (scheduled and on demand).`,
		Args: cobra.ExactArgs(1)}
	kcl := bindAPIClient(check.Flags(), getenv, DefaultURL, connHelp)
	kwh := check.Flags().String("warehouse", "", "warehouse (default the server's)")
	khist := check.Flags().Bool("history", false, "print the stored runs instead of running the checks")
	klimit := check.Flags().Int("limit", 10, "runs printed with --history")
	kjson := check.Flags().Bool("json", false, "print JSON")
	check.RunE = func(c *cobra.Command, args []string) error {
		if *khist {
			var ls mgmtapi.CheckRunList
			q := url.Values{"limit": {fmt.Sprint(*klimit)}}
			if err := kcl.call(c.Context(), "GET", withWarehouse(productPath(args[0], "checks"), *kwh, q), nil, &ls); err != nil {
				return err
			}
			if *kjson {
				return printJSON(stdout, ls)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AT\tVERSION\tTRIGGER\tBY\tSTATUS\tNOT PASSED")
			for _, r := range ls.Runs {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.At.Format(time.RFC3339), r.Version, r.Trigger, r.By, r.Status, strings.Join(notPassed(r), ", "))
			}
			return tw.Flush()
		}
		var run products.CheckRun
		if err := kcl.call(c.Context(), "POST", withWarehouse(productPath(args[0], "checks"), *kwh, nil), nil, &run); err != nil {
			return err
		}
		if *kjson {
			if err := printJSON(stdout, run); err != nil {
				return err
			}
		} else {
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "EXPECTATION\tKIND\tSTATUS\tOBSERVED\tDETAIL")
			for _, r := range run.Results {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Expectation, r.Kind, r.Status, r.Observed, oneLine(r.Detail, 100))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: %s (version %d, run %s)\n", run.Product, run.Status, run.Version, run.ID)
		}
		if run.Status != products.StatusPass {
			return &ExitError{Code: 1, Err: fmt.Errorf("data product %s: %s: %s", run.Product, run.Status, strings.Join(notPassed(run), ", "))}
		}
		return nil
	}

	metrics := &cobra.Command{Use: "metrics NAME [METRIC]", Short: "List a product's metrics, or compute one at a grain and by dimensions",
		Example: `  floe product metrics sales_pipeline
  floe product metrics sales_pipeline open_pipeline_value --grain month --by region`,
		Args: cobra.RangeArgs(1, 2)}
	mcl := bindAPIClient(metrics.Flags(), getenv, DefaultURL, connHelp)
	mwh := metrics.Flags().String("warehouse", "", "warehouse (default the server's)")
	grain := metrics.Flags().String("grain", "", "time grain: day, week, month, quarter or year")
	by := metrics.Flags().StringSlice("by", nil, "dimensions to group by (repeat or separate with commas)")
	sqlOnly := metrics.Flags().Bool("sql", false, "print the SQL instead of running it")
	metrics.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 1 {
			var p products.Product
			if err := mcl.call(c.Context(), "GET", withWarehouse(productPath(args[0]), *mwh, nil), nil, &p); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "METRIC\tPORT\tEXPR\tGRAINS\tDIMENSIONS\tDESCRIPTION")
			for _, m := range p.Metrics {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Port, oneLine(m.Expr, 40), strings.Join(m.Grains, ","), strings.Join(m.Dimensions, ","), oneLine(m.Description, 60))
			}
			return tw.Flush()
		}
		q := url.Values{}
		if *grain != "" {
			q.Set("grain", *grain)
		}
		for _, d := range *by {
			q.Add("dimension", d)
		}
		var mq mgmtapi.MetricQuery
		if err := mcl.call(c.Context(), "GET", withWarehouse(productPath(args[0], "metrics", args[1]), *mwh, q), nil, &mq); err != nil {
			return err
		}
		if *sqlOnly {
			fmt.Fprintln(stdout, mq.SQL)
			return nil
		}
		body, err := json.Marshal(map[string]any{"sql": mq.SQL})
		if err != nil {
			return err
		}
		var csv []byte
		if err := mcl.do(c.Context(), "POST", "/api/v1/query?format=csv", bytes.NewReader(body), int64(len(body)), "application/json", &csv); err != nil {
			return err
		}
		_, err = stdout.Write(csv)
		return err
	}

	drop := &cobra.Command{Use: "drop NAME", Short: "Drop a data product (its outputs stay; their product properties go)", Args: cobra.ExactArgs(1)}
	dcl := bindAPIClient(drop.Flags(), getenv, DefaultURL, connHelp)
	dwh := drop.Flags().String("warehouse", "", "warehouse (default the server's)")
	drop.RunE = func(c *cobra.Command, args []string) error {
		if err := dcl.call(c.Context(), "DELETE", withWarehouse(productPath(args[0]), *dwh, nil), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "dropped data product %q\n", args[0])
		return nil
	}
	grantCmd := func(use, short string, revoke bool) *cobra.Command {
		gc := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(5),
			Example: "  floe product " + strings.Fields(use)[0] + " sales_pipeline SELECT TO role analysts"}
		gcl := bindAPIClient(gc.Flags(), getenv, DefaultURL, connHelp)
		gwh := gc.Flags().String("warehouse", "", "warehouse (default the server's)")
		gc.RunE = func(c *cobra.Command, args []string) error {
			if w := strings.ToUpper(args[2]); w != "TO" && (!revoke || w != "FROM") {
				return floe.E(floe.Invalid, "grant", "expected %s, got %q", map[bool]string{false: "TO", true: "TO or FROM"}[revoke], args[2])
			}
			req := mgmtapi.ProductGrantRequest{Grantee: &mgmtapi.Grantee{Kind: strings.ToLower(args[3]), Name: args[4]}, Privilege: strings.ToUpper(args[1])}
			if revoke {
				if err := gcl.call(c.Context(), "POST", withWarehouse(productPath(args[0], "grants", "revoke"), *gwh, nil), req, nil); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "revoked %s on data product %q from %s %s\n", req.Privilege, args[0], req.Grantee.Kind, req.Grantee.Name)
				return nil
			}
			var g mgmtapi.Grant
			if err := gcl.call(c.Context(), "POST", withWarehouse(productPath(args[0], "grants"), *gwh, nil), req, &g); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "granted %s on data product %q (%s) to %s %s\n", g.Privilege, args[0], g.Description, g.Grantee.Kind, g.Grantee.Name)
			return nil
		}
		return gc
	}
	grant := grantCmd("grant NAME PRIVILEGE TO principal|role GRANTEE", "Grant DESCRIBE or SELECT on every output of a product, present and future", false)
	revoke := grantCmd("revoke NAME PRIVILEGE FROM principal|role GRANTEE", "Revoke a grant on a product", true)
	grants := &cobra.Command{Use: "grants NAME", Short: "List the grants on a product", Args: cobra.ExactArgs(1)}
	lgcl := bindAPIClient(grants.Flags(), getenv, DefaultURL, connHelp)
	lgwh := grants.Flags().String("warehouse", "", "warehouse (default the server's)")
	lgjson := grants.Flags().Bool("json", false, "print JSON")
	grants.RunE = func(c *cobra.Command, args []string) error {
		var gl mgmtapi.GrantList
		if err := lgcl.call(c.Context(), "GET", withWarehouse(productPath(args[0], "grants"), *lgwh, nil), nil, &gl); err != nil {
			return err
		}
		if *lgjson {
			return printJSON(stdout, gl)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PRIVILEGE\tGRANTEE\tCREATED BY\tID")
		for _, g := range gl.Grants {
			fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\n", g.Privilege, g.Grantee.Kind, g.Grantee.Name, g.CreatedBy, g.ID)
		}
		return tw.Flush()
	}
	cmd.AddCommand(create, list, show, check, metrics, drop, grant, revoke, grants)
	return cmd
}

func notPassed(r products.CheckRun) []string {
	var out []string
	for _, x := range r.Results {
		if x.Status != products.StatusPass {
			out = append(out, x.Expectation+" "+x.Status)
		}
	}
	return out
}

func outputNames(p products.Product) string {
	names := make([]string, len(p.Outputs))
	for i, o := range p.Outputs {
		names[i] = o.Namespace.String() + "." + o.Table
	}
	return strings.Join(names, ", ")
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max-1] + "…"
	}
	return s
}

func printProduct(w io.Writer, p products.Product) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	rows := [][2]string{{"name", p.Name}, {"version", fmt.Sprint(p.Version)}, {"warehouse", p.Warehouse}, {"domain", p.Domain},
		{"owner", p.Owner}, {"description", p.Description}, {"terms", strings.Join(p.Terms, ", ")},
		{"published", p.UpdatedAt.Format(time.RFC3339) + " by " + p.UpdatedBy}}
	if p.CheckEvery > 0 {
		rows = append(rows, [2]string{"checked every", time.Duration(p.CheckEvery).String()})
	}
	for _, r := range rows {
		if r[1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\noutputs:")
	for _, o := range p.Outputs {
		fmt.Fprintf(w, "  %s  %s %s.%s  %s\n", o.Name, o.Kind, o.Namespace.String(), o.Table, o.Description)
		for c, d := range o.Columns {
			fmt.Fprintf(w, "      %s: %s\n", c, d)
		}
	}
	if len(p.Metrics) > 0 {
		fmt.Fprintln(w, "\nmetrics:")
		for _, m := range p.Metrics {
			fmt.Fprintf(w, "  %s = %s on %s  %s\n", m.Name, m.Expr, m.Port, m.Description)
		}
	}
	if len(p.Expectations) > 0 {
		fmt.Fprintln(w, "\nexpectations:")
		for _, e := range p.Expectations {
			fmt.Fprintf(w, "  %s  %s %s %s\n", e.Name, e.Kind, e.Port, e.Column)
		}
	}
}
