package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/mgmtapi"
)

// The authorization commands (role, grant, grants, revoke, tag) open the
// store locally, like the principal commands, and so act as the operator:
// with every privilege, without grants. Each change is recorded in the
// audit log with the principal "(cli)".

const cliPrincipal = "(cli)"

// appCmd is a subcommand that opens the App with its own configuration flags.
type appCmd struct {
	cmd  *cobra.Command
	load func() (app.Config, error)
}

func newAppCmd(c *cobra.Command, getenv func(string) string) appCmd {
	return appCmd{cmd: c, load: configFlags(c.Flags(), getenv)}
}

// run sets c's RunE to open the App, call fn and close the App.
func (c appCmd) run(stderr io.Writer, fn func(ctx context.Context, a *app.App, args []string) error) *cobra.Command {
	c.cmd.RunE = func(cmd *cobra.Command, args []string) error {
		a, err := openApp(cmd, c.load, stderr)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		return fn(cmd.Context(), a, args)
	}
	return c.cmd
}

// record appends the audit event of a change made from the command line.
func record(ctx context.Context, a *app.App, action, resource string, detail map[string]any, err error) {
	if detail == nil {
		detail = map[string]any{}
	}
	detail["via"] = "cli"
	e := audit.Event{Principal: cliPrincipal, Action: action, Resource: resource, Outcome: audit.OutcomeSuccess, Detail: detail}
	if err != nil {
		e.Outcome = audit.OutcomeFailure
		detail["error"] = floe.PublicMessage(err)
	}
	// The change itself stands if this fails; Append logs the failure.
	_, _ = a.Audit().Append(context.WithoutCancel(ctx), e)
}

// parseSecurable reads KIND NAME: "warehouse W", "namespace a.b",
// "table a.b.t" or "view a.b.v" (the last level is the name), in
// warehouse wh for all but a warehouse.
func parseSecurable(kind, name, wh string) (authz.Securable, error) {
	k, err := authz.ParseKind(kind)
	if err != nil {
		return authz.Securable{}, err
	}
	var s authz.Securable
	switch k {
	case authz.KindWarehouse:
		s = authz.Warehouse(name)
	case authz.KindNamespace:
		s = authz.Securable{Kind: k, Warehouse: wh, Namespace: mgmtapi.ParseNamespace(name)}
	default:
		levels := mgmtapi.ParseNamespace(name)
		if len(levels) < 2 {
			return authz.Securable{}, floe.E(floe.Invalid, "securable", "a %s is named namespace.name, e.g. crm.accounts (got %q)", k, name)
		}
		s = authz.Securable{Kind: k, Warehouse: wh, Namespace: levels[:len(levels)-1], Name: levels[len(levels)-1]}
	}
	if err := s.Validate(); err != nil {
		return authz.Securable{}, err
	}
	return s, nil
}

func roleCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "role", Short: "Manage roles: named sets of principals that grants can be given to"}

	create := newAppCmd(&cobra.Command{Use: "create NAME", Short: "Create a role", Args: cobra.ExactArgs(1)}, getenv)
	desc := create.cmd.Flags().String("description", "", "what the role is for")
	drop := newAppCmd(&cobra.Command{Use: "drop NAME", Short: "Drop a role with its memberships and the grants to it", Args: cobra.ExactArgs(1)}, getenv)
	list := newAppCmd(&cobra.Command{Use: "list", Short: "List roles", Args: cobra.NoArgs}, getenv)
	show := newAppCmd(&cobra.Command{Use: "show NAME", Short: "Show a role, its members and the grants to it", Args: cobra.ExactArgs(1)}, getenv)
	add := newAppCmd(&cobra.Command{Use: "add-member ROLE PRINCIPAL", Short: "Make a principal a member of a role", Args: cobra.ExactArgs(2)}, getenv)
	remove := newAppCmd(&cobra.Command{Use: "remove-member ROLE PRINCIPAL", Short: "Remove a principal from a role", Args: cobra.ExactArgs(2)}, getenv)

	cmd.AddCommand(
		create.run(stderr, func(ctx context.Context, a *app.App, args []string) error {
			err := a.Authz().CreateRole(ctx, authz.RoleInfo{Name: args[0], Description: *desc})
			record(ctx, a, "mgmt.role.create", "role:"+args[0], map[string]any{"name": args[0], "description": *desc}, err)
			if err == nil {
				fmt.Fprintf(stdout, "created role %q\n", args[0])
			}
			return err
		}),
		drop.run(stderr, func(ctx context.Context, a *app.App, args []string) error {
			err := a.Authz().DropRole(ctx, args[0])
			record(ctx, a, "mgmt.role.drop", "role:"+args[0], nil, err)
			if err == nil {
				fmt.Fprintf(stdout, "dropped role %q\n", args[0])
			}
			return err
		}),
		list.run(stderr, func(ctx context.Context, a *app.App, _ []string) error {
			p, err := a.Authz().Policy(ctx)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tMEMBERS\tDESCRIPTION")
			for _, r := range p.Roles() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, strings.Join(p.Members(r.Name), ","), r.Description)
			}
			return tw.Flush()
		}),
		show.run(stderr, func(ctx context.Context, a *app.App, args []string) error {
			p, err := a.Authz().Policy(ctx)
			if err != nil {
				return err
			}
			r, ok := p.Role(args[0])
			if !ok {
				return floe.E(floe.NotFound, "role", "Role does not exist: %s", args[0])
			}
			fmt.Fprintf(stdout, "role:        %s\ndescription: %s\ncreated:     %s\nmembers:     %s\n", r.Name, r.Description,
				r.CreatedAt.Format(time.RFC3339), strings.Join(p.Members(r.Name), ", "))
			grants := p.Grants(func(g *authz.Grant) bool { return g.Grantee == authz.Role(r.Name) })
			if len(grants) > 0 {
				fmt.Fprintln(stdout, "grants:")
				for _, g := range grants {
					fmt.Fprintf(stdout, "  %s  %s\n", g.ID, g.Describe())
				}
			}
			return nil
		}),
		add.run(stderr, func(ctx context.Context, a *app.App, args []string) error {
			err := a.Authz().AddMember(ctx, args[0], args[1])
			record(ctx, a, "mgmt.role.member.add", "role:"+args[0], map[string]any{"member": args[1]}, err)
			if err == nil {
				fmt.Fprintf(stdout, "principal %q is a member of role %q\n", args[1], args[0])
			}
			return err
		}),
		remove.run(stderr, func(ctx context.Context, a *app.App, args []string) error {
			err := a.Authz().RemoveMember(ctx, args[0], args[1])
			record(ctx, a, "mgmt.role.member.remove", "role:"+args[0], map[string]any{"member": args[1]}, err)
			if err == nil {
				fmt.Fprintf(stdout, "principal %q is no longer a member of role %q\n", args[1], args[0])
			}
			return err
		}),
	)
	return cmd
}

// grantFlags are the options of grant and revoke.
type grantFlags struct {
	allTables        bool
	tagExpr          string
	rowFilter        string
	include, exclude []string
}

func (f *grantFlags) bind(c *cobra.Command) {
	c.Flags().BoolVar(&f.allTables, "all-tables", false, "extend a warehouse or namespace grant to every table and view inside it, including ones created later")
	c.Flags().StringVar(&f.tagExpr, "tag-expr", "", "grant on the objects of the warehouse whose tags match this expression (same as ON tags EXPR)")
	c.Flags().StringVar(&f.rowFilter, "row-filter", "", "SELECT only: an SQL boolean expression rows must satisfy (enforced by the SQL endpoint)")
	c.Flags().StringSliceVar(&f.include, "include-columns", nil, "SELECT only: the only readable columns")
	c.Flags().StringSliceVar(&f.exclude, "exclude-columns", nil, "SELECT only: columns that may not be read")
}

const grantUsage = "PRIVILEGE ON KIND NAME TO principal|role GRANTEE"

const grantLong = `KIND NAME is one of
  warehouse W          the warehouse W
  namespace a.b        a namespace (levels separated by dots)
  table a.b.t          a table (the last level is its name); view a.b.v likewise
  tags "EXPR"          every namespace, table and view of the warehouse whose
                       tags match EXPR, e.g. "domain = sales AND sensitivity = low"
PRIVILEGE is one of DESCRIBE, SELECT, MODIFY, ALTER, CREATE_NAMESPACE,
CREATE_TABLE, CREATE_VIEW, DROP, MANAGE_GRANTS. The warehouse of namespaces,
tables, views and tag grants is the configured one (--warehouse).`

// parseGrant reads PRIVILEGE ON KIND NAME TO principal|role GRANTEE.
func parseGrant(args []string, f *grantFlags, wh string) (authz.Grant, error) {
	if len(args) != 7 || !strings.EqualFold(args[1], "on") || !strings.EqualFold(args[4], "to") {
		return authz.Grant{}, fmt.Errorf("want %s, got %q", grantUsage, strings.Join(args, " "))
	}
	priv, err := authz.ParsePrivilege(args[0])
	if err != nil {
		return authz.Grant{}, err
	}
	kind, err := authz.ParseGranteeKind(args[5])
	if err != nil {
		return authz.Grant{}, err
	}
	g := authz.Grant{Grantee: authz.Grantee{Kind: kind, Name: args[6]}, Privilege: priv, AllTables: f.allTables, TagExpr: f.tagExpr}
	if strings.EqualFold(args[2], "tags") {
		if f.tagExpr != "" {
			return authz.Grant{}, fmt.Errorf("give the tag expression either after ON tags or with --tag-expr, not both")
		}
		g.On, g.TagExpr = authz.Warehouse(wh), args[3]
	} else if g.On, err = parseSecurable(args[2], args[3], wh); err != nil {
		return authz.Grant{}, err
	}
	if f.rowFilter != "" || len(f.include) > 0 || len(f.exclude) > 0 {
		g.Filter = &authz.DataFilter{RowFilter: f.rowFilter, IncludeColumns: f.include, ExcludeColumns: f.exclude}
	}
	return g, nil
}

func grantDetail(g *authz.Grant) map[string]any {
	d := map[string]any{"grant": g.Describe(), "grantee": g.Grantee.String(), "privilege": g.Privilege.String(), "all_tables": g.AllTables}
	if g.ID != "" {
		d["grant_id"] = g.ID
	}
	if g.TagExpr != "" {
		d["tag_expression"] = g.TagExpr
	}
	if f := g.FilterJSON(); f != "" {
		d["filter"] = f
	}
	return d
}

func grantCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	c := newAppCmd(&cobra.Command{Use: "grant " + grantUsage, Short: "Grant a privilege to a principal or role", Long: "Grant a privilege.\n\n" + grantLong,
		Example: `  floe grant SELECT ON table crm.accounts TO principal bi
  floe grant DESCRIBE ON warehouse floe TO role analysts --all-tables
  floe grant SELECT ON tags "domain = sales AND sensitivity = low" TO role analysts
  floe grant SELECT ON table crm.accounts TO role emea --row-filter "region = 'EMEA'" --exclude-columns email`,
	}, getenv)
	var f grantFlags
	f.bind(c.cmd)
	return c.run(stderr, func(ctx context.Context, a *app.App, args []string) error {
		g, err := parseGrant(args, &f, a.Config().Warehouse)
		if err != nil {
			return err
		}
		g.CreatedBy = cliPrincipal
		stored, err := a.Authz().Grant(ctx, g)
		if err == nil {
			g = stored
		}
		record(ctx, a, "mgmt.grant.create", mgmtapi.AuditResource(g.On), grantDetail(&g), err)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "granted %s (id %s)\n", g.Describe(), g.ID)
		return nil
	})
}

func revokeCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	c := newAppCmd(&cobra.Command{Use: "revoke " + grantUsage + " | revoke --id ID", Short: "Revoke a grant, by content or by id",
		Long: "Revoke the grant equal to the arguments and flags (as given to grant), or the grant with --id.\n\n" + grantLong,
		Example: `  floe revoke SELECT ON table crm.accounts TO principal bi
  floe revoke --id 3f2a...`}, getenv)
	var f grantFlags
	f.bind(c.cmd)
	id := c.cmd.Flags().String("id", "", "revoke the grant with this id (see floe grants)")
	return c.run(stderr, func(ctx context.Context, a *app.App, args []string) error {
		if *id != "" {
			if len(args) > 0 {
				return fmt.Errorf("give either --id or the grant, not both")
			}
			p, err := a.Authz().Policy(ctx)
			if err != nil {
				return err
			}
			var detail map[string]any
			resource := "grant:" + *id
			if gs := p.Grants(func(g *authz.Grant) bool { return g.ID == *id }); len(gs) == 1 {
				detail, resource = grantDetail(&gs[0]), mgmtapi.AuditResource(gs[0].On)
			}
			err = a.Authz().RevokeID(ctx, *id)
			record(ctx, a, "mgmt.grant.delete", resource, detail, err)
			if err == nil {
				fmt.Fprintf(stdout, "revoked grant %s\n", *id)
			}
			return err
		}
		g, err := parseGrant(args, &f, a.Config().Warehouse)
		if err != nil {
			return err
		}
		err = a.Authz().Revoke(ctx, g)
		record(ctx, a, "mgmt.grant.revoke", mgmtapi.AuditResource(g.On), grantDetail(&g), err)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s\n", g.Describe())
		return nil
	})
}

func grantsCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	c := newAppCmd(&cobra.Command{Use: "grants", Short: "List grants", Args: cobra.NoArgs,
		Long: `List grants, optionally filtered. --namespace selects grants on that namespace
and on everything inside it; --warehouse (when given) those in that warehouse.`}, getenv)
	filters := map[string]*string{}
	for _, name := range []string{"grantee-kind", "grantee", "privilege", "namespace", "table", "view"} {
		filters[name] = c.cmd.Flags().String(name, "", "only grants with this "+strings.ReplaceAll(name, "-", " "))
	}
	return c.run(stderr, func(ctx context.Context, a *app.App, _ []string) error {
		q := url.Values{}
		for name, v := range filters {
			if *v != "" {
				q.Set(strings.ReplaceAll(name, "-", "_"), *v)
			}
		}
		if c.cmd.Flags().Changed("warehouse") {
			q.Set("warehouse", a.Config().Warehouse)
		}
		keep, err := mgmtapi.GrantFilter(q)
		if err != nil {
			return err
		}
		gs, err := a.Authz().ListGrants(ctx, keep)
		if err != nil {
			return err
		}
		pol, err := a.Authz().Policy(ctx)
		if err != nil {
			return err
		}
		var broken []string
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPRIVILEGE\tON\tGRANTEE\tFILTER\tCREATED BY\tCREATED")
		for _, g := range gs {
			on := g.On.String()
			switch {
			case g.IsTagGrant():
				on = fmt.Sprintf("tags %q in %s", g.TagExpr, g.On)
			case g.AllTables:
				on += " (all tables)"
			}
			filter := g.FilterJSON()
			if filter == "" {
				filter = "-"
			}
			// A filter whose column is gone fails closed: say so.
			if ws := a.Authz().FilterWarnings(ctx, pol, &g); len(ws) > 0 {
				filter = "BROKEN " + filter
				for _, w := range ws {
					broken = append(broken, "grant "+g.ID+" is broken: "+w)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.Privilege, on, g.Grantee, filter, g.CreatedBy, g.CreatedAt.Format(time.RFC3339))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, b := range broken {
			fmt.Fprintln(stdout, b)
		}
		return nil
	})
}

func tagCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "tag", Short: "Set, remove and show tags (key=value) on warehouses, namespaces, tables, views and columns",
		Long: `Tags decide tag-based grants (floe grant ... ON tags "EXPR"). They are inherited
down the tree (warehouse, namespace, table or view, column), a lower level
overriding a key set above. KIND NAME is as in floe grant: warehouse W,
namespace a.b, table a.b.t, view a.b.v.`}

	set := newAppCmd(&cobra.Command{Use: "set KIND NAME KEY=VALUE...", Short: "Set tags (other keys are kept)", Args: cobra.MinimumNArgs(3),
		Example: "  floe tag set table crm.accounts domain=sales sensitivity=low\n  floe tag set table crm.accounts sensitivity=high --column email"}, getenv)
	unset := newAppCmd(&cobra.Command{Use: "unset KIND NAME KEY...", Short: "Remove tags", Args: cobra.MinimumNArgs(3)}, getenv)
	show := newAppCmd(&cobra.Command{Use: "show KIND NAME", Short: "Show a target's tags: its own and those it inherits", Args: cobra.ExactArgs(2)}, getenv)
	var setCol, unsetCol, showCol string
	set.cmd.Flags().StringVar(&setCol, "column", "", "tag this column of the table or view")
	unset.cmd.Flags().StringVar(&unsetCol, "column", "", "untag this column of the table or view")
	show.cmd.Flags().StringVar(&showCol, "column", "", "show this column of the table or view")

	target := func(a *app.App, kind, name, col string) (authz.TagTarget, error) {
		s, err := parseSecurable(kind, name, a.Config().Warehouse)
		if err != nil {
			return authz.TagTarget{}, err
		}
		t := authz.TagTarget{On: s, Column: col}
		return t, t.Validate()
	}
	cmd.AddCommand(
		set.run(stderr, func(ctx context.Context, a *app.App, args []string) error {
			t, err := target(a, args[0], args[1], setCol)
			if err != nil {
				return err
			}
			tags := map[string]string{}
			for _, kv := range args[2:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return fmt.Errorf("tag %q: want KEY=VALUE", kv)
				}
				tags[k] = v
			}
			err = a.Authz().SetTags(ctx, t, tags)
			detail := map[string]any{"tags": tags}
			if t.Column != "" {
				detail["column"] = t.Column
			}
			record(ctx, a, "mgmt.tag.set", mgmtapi.AuditResource(t.On), detail, err)
			if err == nil {
				fmt.Fprintf(stdout, "tagged %s\n", t)
			}
			return err
		}),
		unset.run(stderr, func(ctx context.Context, a *app.App, args []string) error {
			t, err := target(a, args[0], args[1], unsetCol)
			if err != nil {
				return err
			}
			err = a.Authz().DeleteTags(ctx, t, args[2:]...)
			detail := map[string]any{"keys": args[2:]}
			if t.Column != "" {
				detail["column"] = t.Column
			}
			record(ctx, a, "mgmt.tag.unset", mgmtapi.AuditResource(t.On), detail, err)
			if err == nil {
				fmt.Fprintf(stdout, "untagged %s\n", t)
			}
			return err
		}),
		show.run(stderr, func(ctx context.Context, a *app.App, args []string) error {
			t, err := target(a, args[0], args[1], showCol)
			if err != nil {
				return err
			}
			p, err := a.Authz().Policy(ctx)
			if err != nil {
				return err
			}
			own, eff := p.Tags(t), p.EffectiveTags(t)
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tSET ON")
			for _, k := range slices.Sorted(maps.Keys(eff)) {
				from := "inherited"
				if v, ok := own[k]; ok && v == eff[k] {
					from = t.String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", k, eff[k], from)
			}
			return tw.Flush()
		}),
	)
	return cmd
}
