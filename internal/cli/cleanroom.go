package cli

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/mgmtapi"
)

// The clean room commands run through a Floe server's management API
// with the caller's credentials: members see a collaboration and its
// query log, its creator manages members, each member configures its own
// tables. Queries run on the SQL endpoint (SET floe.collaboration).

func cleanroomPath(name string, rest ...string) string {
	p := "/api/v1/cleanrooms/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

func cleanroomCmd(stdout io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "cleanroom", Short: "Clean rooms: collaborations that analyse combined data under aggregation, list and custom rules (docs/cleanrooms.md)"}

	create := &cobra.Command{Use: "create NAME", Short: "Create a collaboration, with you as creator and first member", Args: cobra.ExactArgs(1),
		Example: `  floe cleanroom create overlap --member advertiser --description "customers seen in campaigns"`}
	ccl := bindAPIClient(create.Flags(), getenv, DefaultURL, connHelp)
	cdesc := create.Flags().String("description", "", "what the collaboration is for")
	cmembers := create.Flags().StringSlice("member", nil, "a principal of this Floe to add as a member (repeat)")
	creceivers := create.Flags().StringSlice("result-receiver", nil, "a member who may query and receive results (repeat; default every member)")
	create.RunE = func(c *cobra.Command, args []string) error {
		var out cleanroom.Collaboration
		req := cleanroom.CreateRequest{Name: args[0], Description: *cdesc, Members: *cmembers, ResultReceivers: *creceivers}
		if err := ccl.call(c.Context(), "POST", "/api/v1/cleanrooms", req, &out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created collaboration %q with %d members\n", out.Name, len(out.Members))
		return nil
	}

	list := &cobra.Command{Use: "list", Short: "List the collaborations you are a member of", Args: cobra.NoArgs}
	lcl := bindAPIClient(list.Flags(), getenv, DefaultURL, connHelp)
	ljson := list.Flags().Bool("json", false, "print JSON")
	list.RunE = func(c *cobra.Command, _ []string) error {
		var ls mgmtapi.CollaborationList
		if err := lcl.call(c.Context(), "GET", "/api/v1/cleanrooms", nil, &ls); err != nil {
			return err
		}
		if *ljson {
			return printJSON(stdout, ls)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCREATOR\tMEMBERS\tTABLES\tDESCRIPTION")
		for _, x := range ls.Collaborations {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", x.Name, x.Creator, len(x.Members), len(x.Tables), oneLine(x.Description, 60))
		}
		return tw.Flush()
	}

	show := &cobra.Command{Use: "show NAME", Short: "Show a collaboration: members, configured tables and their rules", Args: cobra.ExactArgs(1)}
	scl := bindAPIClient(show.Flags(), getenv, DefaultURL, connHelp)
	sjson := show.Flags().Bool("json", false, "print JSON")
	show.RunE = func(c *cobra.Command, args []string) error {
		var x cleanroom.Collaboration
		if err := scl.call(c.Context(), "GET", cleanroomPath(args[0]), nil, &x); err != nil {
			return err
		}
		if *sjson {
			return printJSON(stdout, x)
		}
		fmt.Fprintf(stdout, "collaboration %s (creator %s)\n", x.Name, x.Creator)
		if x.Description != "" {
			fmt.Fprintf(stdout, "  %s\n", x.Description)
		}
		receivers := "every member"
		if len(x.ResultReceivers) > 0 {
			receivers = strings.Join(x.ResultReceivers, ", ")
		}
		var members []string
		for _, m := range x.Members {
			members = append(members, m.Principal)
		}
		fmt.Fprintf(stdout, "members: %s\nresult receivers: %s\n", strings.Join(members, ", "), receivers)
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TABLE\tOWNER\tSOURCE\tRULE\tIDENTIFIER\tMIN\tJOIN KEYS\tDIMENSIONS\tCOLUMNS")
		for _, t := range x.Tables {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", t.Name, t.Owner, t, t.Kind(), t.Identifier, t.Rule.MinIdentifiers,
				strings.Join(t.JoinKeys, ","), strings.Join(t.Dimensions, ","), strings.Join(t.Columns, ","))
		}
		return tw.Flush()
	}

	add := &cobra.Command{Use: "add-member NAME PRINCIPAL", Short: "Add a principal of this Floe to a collaboration (its creator)", Args: cobra.ExactArgs(2)}
	acl := bindAPIClient(add.Flags(), getenv, DefaultURL, connHelp)
	arecv := add.Flags().Bool("result-receiver", false, "also make it a result receiver (when the collaboration lists them)")
	add.RunE = func(c *cobra.Command, args []string) error {
		var out cleanroom.Collaboration
		if err := acl.call(c.Context(), "POST", cleanroomPath(args[0], "members"), mgmtapi.AddMemberRequest{Principal: args[1], ResultReceiver: *arecv}, &out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "added %q to collaboration %q (%d members)\n", args[1], out.Name, len(out.Members))
		return nil
	}

	conf := &cobra.Command{Use: "configure-table NAME TABLE_NAME NAMESPACE.TABLE", Short: "Configure one of your tables in a collaboration, with its analysis rule",
		Long: `Configure one of your tables in a collaboration under TABLE_NAME, the name
its queries use. You must hold SELECT on the table without a data filter.
--identifier is the column whose distinct values every output row must
aggregate at least --min-identifiers of (rows below are suppressed);
--join-key columns are what joins may match on, --dimension columns what
queries may group by and filter with literals, --column columns what SUM
and AVG may take (COUNT takes any of them).

--analysis-rule list: queries list the --column columns of rows that
match, on the join keys, rows of another member's table (no aggregates,
identifiers and join keys never output, no threshold).
--analysis-rule custom: only the collaboration's approved query templates
read the table (floe cleanroom template).`,
		Example: `  floe cleanroom configure-table overlap customers retail.customers \
    --identifier customer_id --join-key email_hash --dimension segment --min-identifiers 3`,
		Args: cobra.ExactArgs(3)}
	fcl := bindAPIClient(conf.Flags(), getenv, DefaultURL, connHelp)
	fwh := conf.Flags().String("warehouse", "", "warehouse of the table (default the server's)")
	frule := conf.Flags().String("analysis-rule", "aggregation", "aggregation, list or custom")
	fid := conf.Flags().String("identifier", "", "the identifier column (required by the aggregation rule)")
	fmin := conf.Flags().Int("min-identifiers", 0, "minimum distinct identifiers behind every output row, at least 2 (required by the aggregation rule)")
	fkeys := conf.Flags().StringSlice("join-key", nil, "a column joins may match on (repeat)")
	fdims := conf.Flags().StringSlice("dimension", nil, "a column queries may group by and filter on (repeat)")
	fcols := conf.Flags().StringSlice("column", nil, "a column SUM and AVG may take (repeat)")
	fbound := conf.Flags().Int("max-contributions", 0, "under differential privacy: rows kept per identifier (default 1)")
	franges := conf.Flags().StringSlice("range", nil, "under differential privacy: COLUMN=LO:HI, the range a SUM/AVG column is clamped to (repeat)")
	conf.RunE = func(c *cobra.Command, args []string) error {
		i := strings.LastIndex(args[2], ".")
		if i <= 0 || i == len(args[2])-1 {
			return fmt.Errorf("%q: give the table as NAMESPACE.TABLE", args[2])
		}
		req := mgmtapi.ConfigureTableRequest{Warehouse: *fwh, AnalysisRule: *frule, Namespace: catalog.Namespace(strings.Split(args[2][:i], ".")), Table: args[2][i+1:],
			Identifier: *fid, JoinKeys: *fkeys, Dimensions: *fdims, Columns: *fcols, Rule: cleanroom.AggregationRule{MinIdentifiers: *fmin, MaxContributions: *fbound}}
		for _, r := range *franges {
			col, lohi, ok1 := strings.Cut(r, "=")
			lo, hi, ok2 := strings.Cut(lohi, ":")
			l, err1 := strconv.ParseFloat(lo, 64)
			h, err2 := strconv.ParseFloat(hi, 64)
			if !ok1 || !ok2 || err1 != nil || err2 != nil {
				return fmt.Errorf("--range %q: give COLUMN=LO:HI", r)
			}
			if req.Rule.Ranges == nil {
				req.Rule.Ranges = map[string]cleanroom.Range{}
			}
			req.Rule.Ranges[col] = cleanroom.Range{Lo: l, Hi: h}
		}
		var out cleanroom.Collaboration
		if err := fcl.call(c.Context(), "PUT", cleanroomPath(args[0], "tables", args[1]), req, &out); err != nil {
			return err
		}
		if *frule != cleanroom.RuleAggregation {
			fmt.Fprintf(stdout, "configured table %q of collaboration %q (%s rule)\n", args[1], out.Name, *frule)
			return nil
		}
		fmt.Fprintf(stdout, "configured table %q of collaboration %q (at least %d distinct %s per output row)\n", args[1], out.Name, *fmin, *fid)
		return nil
	}

	logc := &cobra.Command{Use: "log NAME", Short: "Show a collaboration's query log (every member reads it)", Args: cobra.ExactArgs(1)}
	gcl := bindAPIClient(logc.Flags(), getenv, DefaultURL, connHelp)
	glimit := logc.Flags().Int("limit", 100, "at most this many queries, newest first")
	gjson := logc.Flags().Bool("json", false, "print JSON")
	logc.RunE = func(c *cobra.Command, args []string) error {
		var lg mgmtapi.QueryLog
		if err := gcl.call(c.Context(), "GET", fmt.Sprintf("%s?limit=%d", cleanroomPath(args[0], "queries"), *glimit), nil, &lg); err != nil {
			return err
		}
		if *gjson {
			return printJSON(stdout, lg)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "AT\tMEMBER\tOUTCOME\tROWS\tSUPPRESSED\tSQL")
		for _, q := range lg.Queries {
			what := oneLine(q.SQL, 80)
			if q.Error != "" {
				what += "  -- " + oneLine(q.Error, 80)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", q.At.Format("2006-01-02T15:04:05Z"), q.Member, q.Outcome, q.Rows, q.Suppressed, what)
		}
		return tw.Flush()
	}

	drop := &cobra.Command{Use: "drop NAME", Short: "Drop a collaboration and its query log (its creator)", Args: cobra.ExactArgs(1)}
	dcl := bindAPIClient(drop.Flags(), getenv, DefaultURL, connHelp)
	drop.RunE = func(c *cobra.Command, args []string) error {
		if err := dcl.call(c.Context(), "DELETE", cleanroomPath(args[0]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "dropped collaboration %q\n", args[0])
		return nil
	}

	priv := &cobra.Command{Use: "privacy NAME", Short: "Turn differential privacy on or off for a collaboration (its creator)", Args: cobra.ExactArgs(1),
		Example: `  floe cleanroom privacy overlap --mechanism laplace --epsilon 0.5`}
	pcl := bindAPIClient(priv.Flags(), getenv, DefaultURL, connHelp)
	pmech := priv.Flags().String("mechanism", cleanroom.Laplace, "laplace or gaussian")
	peps := priv.Flags().Float64("epsilon", 0, "epsilon each query charges to the budget (required unless --off)")
	pdelta := priv.Flags().Float64("delta", 0, "delta of the gaussian mechanism")
	poff := priv.Flags().Bool("off", false, "turn differential privacy off")
	priv.RunE = func(c *cobra.Command, args []string) error {
		req := mgmtapi.PrivacyRequest{}
		if !*poff {
			req.Privacy = &cleanroom.Privacy{Mechanism: *pmech, Epsilon: *peps, Delta: *pdelta}
		}
		var out cleanroom.Collaboration
		if err := pcl.call(c.Context(), "PUT", cleanroomPath(args[0], "privacy"), req, &out); err != nil {
			return err
		}
		if out.Privacy == nil {
			fmt.Fprintf(stdout, "differential privacy is off for collaboration %q\n", out.Name)
		} else {
			fmt.Fprintf(stdout, "differential privacy is on for collaboration %q: %s, epsilon %g per query\n", out.Name, out.Privacy.Mechanism, out.Privacy.Epsilon)
		}
		return nil
	}

	budget := &cobra.Command{Use: "budget NAME", Short: "Show a collaboration's privacy budget, or set it (its creator)", Args: cobra.ExactArgs(1),
		Example: `  floe cleanroom budget overlap --set 10 --period 24h
  floe cleanroom budget overlap`}
	bcl := bindAPIClient(budget.Flags(), getenv, DefaultURL, connHelp)
	bset := budget.Flags().Float64("set", 0, "set the budget: epsilon per period")
	bperiod := budget.Flags().Duration("period", 0, "the budget's refresh period with --set (default 24h)")
	bjson := budget.Flags().Bool("json", false, "print JSON")
	budget.RunE = func(c *cobra.Command, args []string) error {
		var out cleanroom.Budget
		var err error
		if budget.Flags().Changed("set") {
			req := mgmtapi.BudgetRequest{Epsilon: *bset}
			if *bperiod != 0 {
				req.Period = bperiod.String()
			}
			err = bcl.call(c.Context(), "PUT", cleanroomPath(args[0], "budget"), req, &out)
		} else {
			err = bcl.call(c.Context(), "GET", cleanroomPath(args[0], "budget"), nil, &out)
		}
		if err != nil {
			return err
		}
		if *bjson {
			return printJSON(stdout, out)
		}
		fmt.Fprintf(stdout, "collaboration %s: epsilon %g remaining of %g per %s (spent %g; refresh at %s)\n",
			out.Collaboration, out.Remaining, out.Epsilon, out.PeriodText, out.Spent, out.Refresh.Format("2006-01-02T15:04:05Z"))
		return nil
	}

	cmd.AddCommand(create, list, show, add, conf, logc, drop, priv, budget, templateCmd(stdout, getenv))
	return cmd
}

// templateCmd is floe cleanroom template: the query templates of the
// custom analysis rule.
func templateCmd(stdout io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "template", Short: "Query templates of a collaboration's custom-rule tables: add, list, approve, remove"}

	add := &cobra.Command{Use: "add NAME TEMPLATE", Short: "Add a query template (counts as your approval)", Args: cobra.ExactArgs(2),
		Long: `Add a query template to a collaboration: one SELECT over its custom-rule
tables, with named parameters written $name and declared with --param
NAME:TYPE (varchar, bigint, double, boolean, date). The members given with
--allow run it on the SQL endpoint:

  SET floe.collaboration = 'NAME';
  EXECUTE TEMPLATE TEMPLATE (param => 'value', ...);

It runs once the owner of every custom-rule table it reads approved it
(floe cleanroom template approve).`,
		Example: `  floe cleanroom template add overlap campaigns_by_segment --allow advertiser --param segment:varchar \
    --sql "SELECT DISTINCT e.campaign FROM customers c JOIN exposures e ON c.email = e.email WHERE c.segment = \$segment"`}
	acl := bindAPIClient(add.Flags(), getenv, DefaultURL, connHelp)
	asql := add.Flags().String("sql", "", "the template's SELECT, $name for a parameter (required)")
	aparams := add.Flags().StringSlice("param", nil, "a parameter as NAME:TYPE (repeat)")
	aallow := add.Flags().StringSlice("allow", nil, "a member who may run it (repeat; at least one)")
	add.RunE = func(c *cobra.Command, args []string) error {
		req := mgmtapi.TemplateRequest{Name: args[1], SQL: *asql, AllowedMembers: *aallow}
		for _, p := range *aparams {
			name, typ, ok := strings.Cut(p, ":")
			if !ok {
				return fmt.Errorf("--param %q: give NAME:TYPE", p)
			}
			req.Params = append(req.Params, cleanroom.TemplateParam{Name: name, Type: typ})
		}
		var out cleanroom.Template
		if err := acl.call(c.Context(), "POST", cleanroomPath(args[0], "templates"), req, &out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "added template %q to collaboration %q (approved by %s)\n", out.Name, args[0], approvers(out))
		return nil
	}

	list := &cobra.Command{Use: "list NAME", Short: "List a collaboration's query templates (every member)", Args: cobra.ExactArgs(1)}
	lcl := bindAPIClient(list.Flags(), getenv, DefaultURL, connHelp)
	ljson := list.Flags().Bool("json", false, "print JSON")
	list.RunE = func(c *cobra.Command, args []string) error {
		var ls mgmtapi.TemplateList
		if err := lcl.call(c.Context(), "GET", cleanroomPath(args[0], "templates"), nil, &ls); err != nil {
			return err
		}
		if *ljson {
			return printJSON(stdout, ls)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TEMPLATE\tAUTHOR\tALLOWED\tAPPROVED BY\tPARAMS\tSQL")
		for _, t := range ls.Templates {
			var params []string
			for _, p := range t.Params {
				params = append(params, p.Name+":"+p.Type)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.CreatedBy, strings.Join(t.AllowedMembers, ","), approvers(t),
				strings.Join(params, ","), strings.Join(strings.Fields(t.SQL), " "))
		}
		return tw.Flush()
	}

	approve := &cobra.Command{Use: "approve NAME TEMPLATE", Short: "Approve a query template (the owners of the tables it reads)", Args: cobra.ExactArgs(2)}
	pcl := bindAPIClient(approve.Flags(), getenv, DefaultURL, connHelp)
	approve.RunE = func(c *cobra.Command, args []string) error {
		var out cleanroom.Template
		if err := pcl.call(c.Context(), "POST", cleanroomPath(args[0], "templates", args[1], "approvals"), nil, &out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "approved template %q of collaboration %q (approved by %s)\n", out.Name, args[0], approvers(out))
		return nil
	}

	remove := &cobra.Command{Use: "remove NAME TEMPLATE", Short: "Remove a query template (its author or the collaboration's creator)", Args: cobra.ExactArgs(2)}
	rcl := bindAPIClient(remove.Flags(), getenv, DefaultURL, connHelp)
	remove.RunE = func(c *cobra.Command, args []string) error {
		if err := rcl.call(c.Context(), "DELETE", cleanroomPath(args[0], "templates", args[1]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed template %q of collaboration %q\n", args[1], args[0])
		return nil
	}
	cmd.AddCommand(add, list, approve, remove)
	return cmd
}

func approvers(t cleanroom.Template) string {
	var out []string
	for _, a := range t.Approvals {
		out = append(out, a.Member)
	}
	return strings.Join(out, ", ")
}
