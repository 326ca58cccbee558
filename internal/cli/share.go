package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/mgmtapi"
)

// The sharing commands (share, recipient) run through a Floe server's
// management API with the caller's credentials, so that the caller owns
// what it creates and the server's privilege checks apply.

const connHelp = "Floe server URL (env FLOE_URL; default " + DefaultURL + ")"

func sharePath(share string, rest ...string) string {
	p := "/api/v1/shares/" + url.PathEscape(share)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

func recipientPath(name string, rest ...string) string {
	p := "/api/v1/recipients/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func shareCmd(stdout io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "share", Short: "Manage shares: named sets of tables, views and namespaces offered to recipients (Delta Sharing, share catalogs)"}

	create := &cobra.Command{Use: "create NAME", Short: "Create a share (needs CREATE_SHARE on the warehouse); you own it", Args: cobra.ExactArgs(1)}
	ccl := bindAPIClient(create.Flags(), getenv, DefaultURL, connHelp)
	cwh := create.Flags().String("share-warehouse", "", "warehouse whose objects the share holds (default the server's)")
	ccomment := create.Flags().String("comment", "", "what the share is for")
	create.RunE = func(c *cobra.Command, args []string) error {
		var sh mgmtapi.Share
		if err := ccl.call(c.Context(), "POST", "/api/v1/shares", mgmtapi.ShareRequest{Name: args[0], Warehouse: *cwh, Comment: *ccomment}, &sh); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created share %q of warehouse %q (owner %s)\n", sh.Name, sh.Warehouse, sh.Owner)
		return nil
	}

	add := &cobra.Command{Use: "add SHARE table|view|namespace|product NAME", Short: "Add a table, view, namespace or data product to a share (needs MANAGE_GRANTS on it)",
		Long: `Add an object to a share. NAME is the real name (crm.accounts, or crm for a
namespace, or a data product's name). --as sets the name recipients see
(schema.table, or schema for a namespace or a product); a namespace of
several levels needs one. A namespace shares every table and view directly
inside it, including ones created later. A product shares the outputs of
its current version, following its new versions; recipients see them under
their own names (or all in the --as schema).`,
		Args: cobra.ExactArgs(3)}
	acl := bindAPIClient(add.Flags(), getenv, DefaultURL, connHelp)
	as := add.Flags().String("as", "", "name recipients see: schema.table (table, view) or schema (namespace)")
	history := add.Flags().Bool("history", false, "share older snapshots too (time travel); default the current snapshot only")
	filter := add.Flags().String("partition-filter", "", "share only the partitions matching this predicate on partition columns, e.g. \"region = 'EMEA'\"")
	add.RunE = func(c *cobra.Command, args []string) error {
		req := mgmtapi.ShareObjectRequest{Kind: strings.ToLower(args[1]), Name: args[2], History: *history, PartitionFilter: *filter}
		if *as != "" {
			if req.Kind == "namespace" || req.Kind == "product" {
				req.AliasSchema = *as
			} else {
				i := strings.LastIndex(*as, ".")
				if i <= 0 || i == len(*as)-1 {
					return floe.E(floe.Invalid, "share object", "--as takes schema.table for a %s (got %q)", req.Kind, *as)
				}
				req.AliasSchema, req.AliasName = (*as)[:i], (*as)[i+1:]
			}
		}
		var o mgmtapi.ShareObject
		if err := acl.call(c.Context(), "POST", sharePath(args[0], "objects"), req, &o); err != nil {
			return err
		}
		seen := o.Schema
		if o.Table != "" {
			seen += "." + o.Table
		}
		if seen == "" {
			seen = "its outputs' own names"
		}
		fmt.Fprintf(stdout, "added %s %s to share %q as %s (id %s)\n", o.Kind, o.Name, args[0], seen, o.ID)
		return nil
	}

	remove := &cobra.Command{Use: "remove SHARE OBJECT", Short: "Remove an object (by the name recipients see, or its id) from a share", Args: cobra.ExactArgs(2)}
	rcl := bindAPIClient(remove.Flags(), getenv, DefaultURL, connHelp)
	remove.RunE = func(c *cobra.Command, args []string) error {
		if err := rcl.call(c.Context(), "DELETE", sharePath(args[0], "objects", args[1]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed %s from share %q\n", args[1], args[0])
		return nil
	}

	show := &cobra.Command{Use: "show SHARE", Short: "Show a share, its objects and its recipients", Args: cobra.ExactArgs(1)}
	scl := bindAPIClient(show.Flags(), getenv, DefaultURL, connHelp)
	sjson := show.Flags().Bool("json", false, "print JSON")
	show.RunE = func(c *cobra.Command, args []string) error {
		var sh mgmtapi.Share
		if err := scl.call(c.Context(), "GET", sharePath(args[0]), nil, &sh); err != nil {
			return err
		}
		if *sjson {
			return printJSON(stdout, sh)
		}
		fmt.Fprintf(stdout, "share %s (warehouse %s, owner %s, created %s)\n", sh.Name, sh.Warehouse, sh.Owner, sh.CreatedAt.Format(time.RFC3339))
		if sh.Comment != "" {
			fmt.Fprintf(stdout, "comment: %s\n", sh.Comment)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KIND\tNAME\tSEEN AS\tHISTORY\tPARTITION FILTER")
		for _, o := range sh.Objects {
			seen := o.Schema
			if o.Table != "" {
				seen += "." + o.Table
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", o.Kind, o.Name, seen, o.History, o.PartitionFilter)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		var rs []string
		for _, g := range sh.Recipients {
			rs = append(rs, g.Recipient)
		}
		fmt.Fprintf(stdout, "recipients: %s\n", listOrNone(rs))
		return nil
	}

	list := &cobra.Command{Use: "list", Short: "List the shares you own (all, for an administrator)", Args: cobra.NoArgs}
	lcl := bindAPIClient(list.Flags(), getenv, DefaultURL, connHelp)
	ljson := list.Flags().Bool("json", false, "print JSON")
	list.RunE = func(c *cobra.Command, _ []string) error {
		var ls mgmtapi.ShareList
		if err := lcl.call(c.Context(), "GET", "/api/v1/shares", nil, &ls); err != nil {
			return err
		}
		if *ljson {
			return printJSON(stdout, ls)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tWAREHOUSE\tOWNER\tCOMMENT")
		for _, sh := range ls.Shares {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sh.Name, sh.Warehouse, sh.Owner, sh.Comment)
		}
		return tw.Flush()
	}

	drop := &cobra.Command{Use: "drop SHARE", Short: "Drop a share with its objects and grants", Args: cobra.ExactArgs(1)}
	dcl := bindAPIClient(drop.Flags(), getenv, DefaultURL, connHelp)
	drop.RunE = func(c *cobra.Command, args []string) error {
		if err := dcl.call(c.Context(), "DELETE", sharePath(args[0]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "dropped share %q\n", args[0])
		return nil
	}

	grant := &cobra.Command{Use: "grant SHARE TO RECIPIENT", Short: "Grant a share to a recipient (share owner or administrator)", Args: cobra.ExactArgs(3)}
	gcl := bindAPIClient(grant.Flags(), getenv, DefaultURL, connHelp)
	grant.RunE = func(c *cobra.Command, args []string) error {
		if !strings.EqualFold(args[1], "TO") {
			return floe.E(floe.Invalid, "", "want: floe share grant SHARE TO RECIPIENT")
		}
		if err := gcl.call(c.Context(), "PUT", sharePath(args[0], "recipients", args[2]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "granted share %q to recipient %q\n", args[0], args[2])
		return nil
	}

	revoke := &cobra.Command{Use: "revoke SHARE FROM RECIPIENT", Short: "Revoke a share from a recipient", Args: cobra.ExactArgs(3)}
	vcl := bindAPIClient(revoke.Flags(), getenv, DefaultURL, connHelp)
	revoke.RunE = func(c *cobra.Command, args []string) error {
		if !strings.EqualFold(args[1], "FROM") {
			return floe.E(floe.Invalid, "", "want: floe share revoke SHARE FROM RECIPIENT")
		}
		if err := vcl.call(c.Context(), "DELETE", sharePath(args[0], "recipients", args[2]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked share %q from recipient %q\n", args[0], args[2])
		return nil
	}

	cmd.AddCommand(create, add, remove, show, list, drop, grant, revoke)
	return cmd
}

// writeProfile writes a recipient's profile file, readable by its owner
// only (it holds the bearer token).
func writeProfile(path string, cred mgmtapi.RecipientCredential) error {
	b, err := json.MarshalIndent(cred.Profile, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("profile file: %w", err)
	}
	if err := f.Chmod(0o600); err != nil { // an existing file keeps its mode otherwise
		_ = f.Close()
		return fmt.Errorf("profile file: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		_ = f.Close()
		return fmt.Errorf("profile file: %w", err)
	}
	return f.Close()
}

// printCredential shows a new token: into the profile file when given
// (the token then appears nowhere else), else the whole credential as JSON.
func printCredential(stdout io.Writer, what string, cred mgmtapi.RecipientCredential, profileOut string) error {
	if profileOut == "" {
		fmt.Fprintf(stdout, "%s recipient %q (token id %s); its bearer token is shown only now:\n", what, cred.Recipient.Name, cred.TokenID)
		return printJSON(stdout, cred)
	}
	if err := writeProfile(profileOut, cred); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s recipient %q (token id %s); Delta Sharing profile written to %s (mode 0600)\n", what, cred.Recipient.Name, cred.TokenID, profileOut)
	fmt.Fprintf(stdout, "Iceberg REST catalog of a share: uri %s, warehouse %s, token: the profile's bearerToken\n",
		cred.IcebergTemplate.URI, cred.IcebergTemplate.Warehouse)
	return nil
}

func recipientCmd(stdout io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "recipient", Short: "Manage recipients: parties outside Floe that shares are granted to, with bearer tokens"}

	create := &cobra.Command{Use: "create NAME", Short: "Create a recipient and its first bearer token (shown once)", Args: cobra.ExactArgs(1)}
	ccl := bindAPIClient(create.Flags(), getenv, DefaultURL, connHelp)
	comment := create.Flags().String("comment", "", "who the recipient is")
	props := create.Flags().StringArray("property", nil, "property KEY=VALUE (repeatable)")
	cidrs := create.Flags().StringSlice("allowed-cidrs", nil, "addresses the recipient may connect from (CIDR prefixes, comma-separated; default any)")
	expiresIn := create.Flags().Duration("expires-in", 0, "the recipient's tokens stop working after this long (default never)")
	cout := create.Flags().String("profile-out", "", "write the Delta Sharing profile file here (mode 0600) instead of printing the token")
	create.RunE = func(c *cobra.Command, args []string) error {
		p, err := propertyArgs("--property", *props)
		if err != nil {
			return err
		}
		req := mgmtapi.RecipientRequest{Name: args[0], Comment: *comment, Properties: p, AllowedCIDRs: *cidrs}
		if *expiresIn < 0 {
			return floe.E(floe.Invalid, "recipient", "--expires-in must be positive")
		}
		if *expiresIn > 0 {
			at := time.Now().Add(*expiresIn).UTC()
			req.ExpiresAt = &at
		}
		var cred mgmtapi.RecipientCredential
		if err := ccl.call(c.Context(), "POST", "/api/v1/recipients", req, &cred); err != nil {
			return err
		}
		return printCredential(stdout, "created", cred, *cout)
	}

	rotate := &cobra.Command{Use: "rotate NAME", Short: "Give a recipient a new token (shown once); the old one works for --grace", Args: cobra.ExactArgs(1)}
	rcl := bindAPIClient(rotate.Flags(), getenv, DefaultURL, connHelp)
	grace := rotate.Flags().Duration("grace", time.Hour, "how long the old token keeps working; 0 revokes it (and what was vended under it) at once")
	rout := rotate.Flags().String("profile-out", "", "write the new Delta Sharing profile file here (mode 0600) instead of printing the token")
	rotate.RunE = func(c *cobra.Command, args []string) error {
		if *grace < 0 {
			return floe.E(floe.Invalid, "recipient", "--grace must not be negative")
		}
		secs := int64(*grace / time.Second)
		var cred mgmtapi.RecipientCredential
		if err := rcl.call(c.Context(), "POST", recipientPath(args[0], "rotate"), mgmtapi.RotateRequest{GraceSeconds: &secs}, &cred); err != nil {
			return err
		}
		return printCredential(stdout, "rotated the token of", cred, *rout)
	}

	revoke := &cobra.Command{Use: "revoke NAME", Short: "Revoke a recipient's tokens at once (and what was vended under them)", Args: cobra.ExactArgs(1)}
	vcl := bindAPIClient(revoke.Flags(), getenv, DefaultURL, connHelp)
	tokenID := revoke.Flags().String("token-id", "", "revoke only this token (default every live token)")
	revoke.RunE = func(c *cobra.Command, args []string) error {
		var out mgmtapi.RevokedTokens
		if err := vcl.call(c.Context(), "POST", recipientPath(args[0], "revoke"), mgmtapi.RevokeTokensRequest{TokenID: *tokenID}, &out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %d token(s) of recipient %q: %s\n", len(out.Revoked), args[0], strings.Join(out.Revoked, ", "))
		return nil
	}

	list := &cobra.Command{Use: "list", Short: "List the recipients you created (all, for an administrator)", Args: cobra.NoArgs}
	lcl := bindAPIClient(list.Flags(), getenv, DefaultURL, connHelp)
	ljson := list.Flags().Bool("json", false, "print JSON")
	list.RunE = func(c *cobra.Command, _ []string) error {
		var ls mgmtapi.RecipientList
		if err := lcl.call(c.Context(), "GET", "/api/v1/recipients", nil, &ls); err != nil {
			return err
		}
		if *ljson {
			return printJSON(stdout, ls)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tOWNER\tEXPIRES\tALLOWED CIDRS\tCOMMENT")
		for _, r := range ls.Recipients {
			exp := "never"
			if r.ExpiresAt != nil {
				exp = r.ExpiresAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Owner, exp, listOrNone(r.AllowedCIDRs), r.Comment)
		}
		return tw.Flush()
	}

	show := &cobra.Command{Use: "show NAME", Short: "Show a recipient, its tokens (ids only) and its shares", Args: cobra.ExactArgs(1)}
	scl := bindAPIClient(show.Flags(), getenv, DefaultURL, connHelp)
	sjson := show.Flags().Bool("json", false, "print JSON")
	show.RunE = func(c *cobra.Command, args []string) error {
		var r mgmtapi.Recipient
		if err := scl.call(c.Context(), "GET", recipientPath(args[0]), nil, &r); err != nil {
			return err
		}
		if *sjson {
			return printJSON(stdout, r)
		}
		fmt.Fprintf(stdout, "recipient %s (owner %s, created %s)\n", r.Name, r.Owner, r.CreatedAt.Format(time.RFC3339))
		fmt.Fprintf(stdout, "allowed cidrs: %s\nshares: %s\n", listOrNone(r.AllowedCIDRs), listOrNone(r.Shares))
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOKEN ID\tCREATED\tEXPIRES\tREVOKED\tLIVE")
		for _, t := range r.Tokens {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\n", t.ID, t.CreatedAt.Format(time.RFC3339), timeOr(t.ExpiresAt, "never"), timeOr(t.RevokedAt, "-"), t.Live)
		}
		return tw.Flush()
	}

	cmd.AddCommand(create, rotate, revoke, list, show)
	return cmd
}

func timeOr(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.Format(time.RFC3339)
}

// sharingFlags binds the sharing limits of `floe serve`.
func sharingFlags(fs *pflag.FlagSet) func(*app.Config) {
	def := app.Defaults().Sharing
	shares := fs.Int("sharing-max-shares", def.MaxShares, "most shares (env FLOE_SHARING_MAX_SHARES)")
	objects := fs.Int("sharing-max-objects-per-share", def.MaxObjectsPerShare, "most tables, views and namespaces of one share (env FLOE_SHARING_MAX_OBJECTS_PER_SHARE)")
	recipients := fs.Int("sharing-max-recipients", def.MaxRecipients, "most recipients (env FLOE_SHARING_MAX_RECIPIENTS)")
	tokens := fs.Int("sharing-max-tokens-per-recipient", def.MaxTokensPerRecipient, "most live tokens of one recipient, counting old ones in their rotation grace (env FLOE_SHARING_MAX_TOKENS_PER_RECIPIENT)")
	return func(cfg *app.Config) {
		s := &cfg.Sharing
		for name, set := range map[string]func(){
			"sharing-max-shares":               func() { s.MaxShares = *shares },
			"sharing-max-objects-per-share":    func() { s.MaxObjectsPerShare = *objects },
			"sharing-max-recipients":           func() { s.MaxRecipients = *recipients },
			"sharing-max-tokens-per-recipient": func() { s.MaxTokensPerRecipient = *tokens },
		} {
			if fs.Changed(name) {
				set()
			}
		}
	}
}
