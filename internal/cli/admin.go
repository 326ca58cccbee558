package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/objstore/sse"
)

// signingKeyCmd is `floe signing-key rotate`.
func signingKeyCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "signing-key", Short: "Manage Floe's token signing keys"}
	rotate := &cobra.Command{Use: "rotate", Args: cobra.NoArgs,
		Short: "Create a new signing key and make it current",
		Long: `Create a new token signing key and make it current on every node. Older
keys stay in the JWKS and keep verifying until every token they signed has
expired, then they are pruned; clients notice nothing.`}
	load := configFlags(rotate.Flags(), getenv)
	rotate.RunE = func(c *cobra.Command, _ []string) error {
		a, err := openApp(c, load, stderr)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		kid, err := a.Auth().RotateKey(c.Context())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "new signing key: %s\n", kid)
		return nil
	}
	cmd.AddCommand(rotate)
	return cmd
}

// encryptionCmd is `floe encryption new-key` and `floe encryption rewrap`.
func encryptionCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "encryption", Short: "Manage the warehouse keys that encrypt the embedded store at rest"}
	newKey := &cobra.Command{Use: "new-key", Args: cobra.NoArgs,
		Short: "Print a new key line to append to the key file",
		Long: `Print a line "<id> <base64 key>" for a new 256-bit warehouse key. Append it to
the key file (the last key is current), restart the nodes, then run
"floe encryption rewrap" to move existing objects to it.`}
	newKey.RunE = func(c *cobra.Command, _ []string) error {
		k, err := sse.GenerateKey()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "k%s %s\n", time.Now().UTC().Format("20060102T150405"), k)
		return nil
	}
	rewrap := &cobra.Command{Use: "rewrap", Args: cobra.NoArgs,
		Short: "Re-wrap every object's data key under the current warehouse key (no data is rewritten)"}
	load := configFlags(rewrap.Flags(), getenv)
	rewrap.RunE = func(c *cobra.Command, _ []string) error {
		a, err := openApp(c, load, stderr)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		start := time.Now()
		res, err := a.RewrapObjects(c.Context())
		fmt.Fprintf(stdout, "scanned %d objects: %d re-wrapped, %d not encrypted (%s)\n", res.Scanned, res.Rewrapped, res.Plaintext, time.Since(start).Round(time.Millisecond))
		return err
	}
	cmd.AddCommand(newKey, rewrap)
	return cmd
}

// auditCmd is `floe audit verify`, `floe audit tail` and `floe audit query`.
func auditCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Inspect, query and verify the audit log"}
	verify := &cobra.Command{Use: "verify", Args: cobra.NoArgs,
		Short: "Check the audit log's hash chain and the checkpoints in the warehouse; exits non-zero if the history is not proven",
		Long: `Check the audit log's hash chain in the metadata store, and the store against
the signed checkpoints of the chain's head that the server writes into the
warehouse (_floe/audit/checkpoints/). Exits non-zero when a record was
modified, deleted or inserted, when the store was rewritten consistently
(records, hashes and head) so that it disagrees with a checkpoint, or when a
checkpoint was deleted; the error says up to which record the history is
proven and from which record on it is not.`}
	vload := configFlags(verify.Flags(), getenv)
	verify.RunE = func(c *cobra.Command, _ []string) error {
		a, err := openApp(c, vload, stderr)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		objs, err := a.SealObjects(c.Context())
		if err != nil {
			return err
		}
		res, rep, err := a.Audit().VerifySeals(c.Context(), objs)
		for _, ig := range rep.Ignored {
			fmt.Fprintf(stderr, "warning: warehouse checkpoint ignored, it proves nothing: %s\n", ig)
		}
		if err != nil {
			return err
		}
		seq, hash, err := a.Store().AuditHead(c.Context())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "audit log intact: %d records, head %s\n", seq, hash)
		if cp := res.Checkpoint; cp != nil {
			fmt.Fprintf(stdout, "pruned: %d records (1..%d) before the checkpoint of %s, signature valid; %d records kept (%d..%d)\n",
				cp.Pruned, cp.Seq, cp.Time.UTC().Format(time.RFC3339), res.Records, res.First, res.Last)
		}
		switch {
		case rep.Proven > 0:
			fmt.Fprintf(stdout, "proven up to record %d (checkpoint at %s) by %d of %d warehouse checkpoints\n",
				rep.Proven, rep.ProvenAt.UTC().Format(time.RFC3339), rep.Trusted, rep.Seals)
		case rep.Trusted > 0:
			fmt.Fprintf(stdout, "no kept record is covered by a warehouse checkpoint (%d checkpoints precede the pruning checkpoint)\n", rep.Before)
		default:
			fmt.Fprintln(stdout, "no warehouse checkpoint: the history is only as good as the metadata store (is audit_checkpoint_interval 0?)")
		}
		if rep.Unsealed > 0 {
			fmt.Fprintf(stdout, "not yet checkpointed: records %d..%d (since %s); the next checkpoint covers them\n",
				rep.Unsealed, seq, rep.UnsealedAt.UTC().Format(time.RFC3339))
		}
		return nil
	}
	tail := &cobra.Command{Use: "tail", Args: cobra.NoArgs, Short: "Print the newest audit records"}
	tload := configFlags(tail.Flags(), getenv)
	n := tail.Flags().IntP("lines", "n", 20, "how many records")
	tail.RunE = func(c *cobra.Command, _ []string) error {
		a, err := openApp(c, tload, stderr)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		head, _, err := a.Store().AuditHead(c.Context())
		if err != nil {
			return err
		}
		rs, err := a.Store().AuditRecords(c.Context(), max(0, head-int64(*n)), *n)
		if err != nil {
			return err
		}
		return printAuditTable(stdout, rs)
	}
	cmd.AddCommand(verify, tail, auditQueryCmd(stdout, stderr, getenv))
	return cmd
}

// auditQueryCmd is `floe audit query`.
func auditQueryCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	query := &cobra.Command{Use: "query", Args: cobra.NoArgs,
		Short: "Print the audit records that match filters (the newest --limit, oldest first)",
		Long: `Print the audit records that match every filter given: the newest --limit of
them, oldest first, as a table or (--json) as one JSON object per line.

--since and --until take an RFC 3339 time (2026-03-01T09:00:00Z), a date
(2026-03-01, midnight UTC) or an age such as 90s, 15m, 1h30m or 7d (that long
before now). --action matches exactly, or by prefix with a trailing *
(--action 'oauth.*'); --resource matches by prefix (--resource table:floe/crm.).

  floe audit query --principal etl --since 1h
  floe audit query --action 's3.*' --resource s3://floe/crm/ --outcome failure
  floe audit query --request-id 6f1c... --json`}
	load := configFlags(query.Flags(), getenv)
	var q audit.Query
	var since, until string
	asJSON := false
	f := query.Flags()
	f.StringVar(&q.Principal, "principal", "", "principal name (exact)")
	f.StringVar(&q.Action, "action", "", "action, exact or prefix with a trailing * (e.g. 'oauth.*')")
	f.StringVar(&q.Resource, "resource", "", "resource prefix (e.g. table:floe/crm.)")
	f.StringVar(&q.Outcome, "outcome", "", "outcome: success, failure, denied, ...")
	f.StringVar(&q.RequestID, "request-id", "", "request id (exact)")
	f.StringVar(&since, "since", "", "only records at or after: RFC 3339 time, date, or age like 1h or 7d")
	f.StringVar(&until, "until", "", "only records before: RFC 3339 time, date, or age like 1h or 7d")
	f.IntVar(&q.Limit, "limit", audit.DefaultQueryLimit, fmt.Sprintf("at most this many records (up to %d)", audit.MaxQueryLimit))
	f.BoolVar(&asJSON, "json", false, "print one JSON object per line (NDJSON) instead of a table")
	query.RunE = func(c *cobra.Command, _ []string) error {
		now := time.Now()
		var err error
		if q.Since, err = parseWhen(since, now); err != nil {
			return fmt.Errorf("--since: %w", err)
		}
		if q.Until, err = parseWhen(until, now); err != nil {
			return fmt.Errorf("--until: %w", err)
		}
		if q.Limit <= 0 {
			return fmt.Errorf("--limit %d: must be positive", q.Limit)
		}
		q.Newest = true
		a, err := openApp(c, load, stderr)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		rs, err := a.Store().AuditQuery(c.Context(), q)
		if err != nil {
			return err
		}
		slices.Reverse(rs) // oldest first
		if asJSON {
			return printAuditJSON(stdout, rs)
		}
		return printAuditTable(stdout, rs)
	}
	return query
}

// parseWhen reads a --since/--until value: "" (no bound), an RFC 3339
// time, a date (midnight UTC), or an age before now: a Go duration (90s,
// 1h30m) or a whole number of days (7d).
func parseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	var age time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time, a date (2006-01-02) or an age like 1h or 7d", s)
		}
		age = time.Duration(n) * 24 * time.Hour
	} else {
		d, err := time.ParseDuration(s)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time, a date (2006-01-02) or an age like 1h or 7d", s)
		}
		age = d
	}
	if age <= 0 {
		return time.Time{}, fmt.Errorf("%q: an age must be positive", s)
	}
	return now.Add(-age), nil
}

// printAuditTable prints records as the aligned table of tail and query.
func printAuditTable(w io.Writer, rs []audit.Record) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tPRINCIPAL\tACTION\tRESOURCE\tOUTCOME\tREQUEST\tDETAIL")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Format(time.RFC3339), r.Principal, r.Action,
			r.Resource, r.Outcome, r.RequestID, r.Detail)
	}
	return tw.Flush()
}

// auditJSON is one line of `floe audit query --json`.
type auditJSON struct {
	Seq        int64           `json:"seq"`
	Time       string          `json:"time"`
	RequestID  string          `json:"request_id"`
	Principal  string          `json:"principal"`
	ClientAddr string          `json:"client_addr"`
	Action     string          `json:"action"`
	Resource   string          `json:"resource"`
	Outcome    string          `json:"outcome"`
	Detail     json.RawMessage `json:"detail"`
	PrevHash   string          `json:"prev_hash"`
	Hash       string          `json:"hash"`
}

// printAuditJSON prints one JSON object per record and line.
func printAuditJSON(w io.Writer, rs []audit.Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range rs {
		detail := json.RawMessage(r.Detail)
		if !json.Valid(detail) { // a damaged record: show its bytes as a string
			b, err := json.Marshal(string(r.Detail))
			if err != nil {
				return err
			}
			detail = b
		}
		if err := enc.Encode(auditJSON{Seq: r.Seq, Time: r.Time.UTC().Format("2006-01-02T15:04:05.000000Z"), RequestID: r.RequestID,
			Principal: r.Principal, ClientAddr: r.ClientAddr, Action: r.Action, Resource: r.Resource, Outcome: r.Outcome,
			Detail: detail, PrevHash: r.PrevHash, Hash: r.Hash}); err != nil {
			return err
		}
	}
	return nil
}
