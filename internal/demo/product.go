package demo

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// ProductName is the demo's data product.
const ProductName = "sales_pipeline"

// Steward is the principal the demo creates to own the product's views:
// not an administrator, it holds SELECT on the base tables the views read
// (crm.accounts, crm.opportunities) and CREATE_VIEW on crm, and creates
// the views with definer rights, so that SELECT on the product reads them
// without any grant on the base tables.
const Steward = "crm_steward"

// The demo product's views, created through the SQL engine (the HTTP query
// API) as the steward, with definer rights.
var productViews = []struct{ name, sql string }{
	{"pipeline", `CREATE VIEW crm.pipeline SECURITY DEFINER AS
SELECT o.opportunity_id, o.account_id, a.name AS account_name, a.region, a.industry, o.stage, o.close_date, o.amount
FROM crm.opportunities o JOIN crm.accounts a ON o.account_id = a.account_id`},
	{"pipeline_by_account", `CREATE VIEW crm.pipeline_by_account SECURITY DEFINER AS
SELECT a.account_id, a.name AS account_name, a.region, a.industry,
       count(o.opportunity_id) AS opportunities,
       coalesce(sum(CASE WHEN o.stage NOT IN ('Closed Won', 'Closed Lost') THEN o.amount END), 0) AS open_pipeline_value,
       coalesce(sum(CASE WHEN o.stage = 'Closed Won' THEN o.amount END), 0) AS won_value
FROM crm.accounts a LEFT JOIN crm.opportunities o ON o.account_id = a.account_id
GROUP BY a.account_id, a.name, a.region, a.industry`},
}

// productDefinition is the demo's sales_pipeline product (docs/products.md
// shows it as YAML).
func productDefinition() map[string]any {
	return map[string]any{
		"name": ProductName, "domain": "sales", "owner": "admin",
		"description": "The sales pipeline: every opportunity with its account's region and industry, open pipeline and won value per account.",
		"terms":       []string{"opportunity", "open pipeline", "win rate"},
		"check_every": "1h",
		"outputs": []map[string]any{
			{"name": "pipeline", "kind": "view", "namespace": []string{"crm"}, "table": "pipeline",
				"description": "One row per opportunity, with its account's name, region and industry."},
			{"name": "pipeline_by_account", "kind": "view", "namespace": []string{"crm"}, "table": "pipeline_by_account",
				"description": "One row per account: opportunities, open pipeline value and won value (EUR)."},
			{"name": "opportunities", "namespace": []string{"crm"}, "table": "opportunities",
				"description": "Sales opportunities, one row each (source table of the product).",
				"columns": map[string]string{
					"opportunity_id": "Unique id of the opportunity.",
					"account_id":     "The account (crm.accounts.account_id) the opportunity is with.",
					"stage":          "Sales stage: Prospecting, Qualification, Proposal, Negotiation, Closed Won or Closed Lost.",
					"close_date":     "Expected (open) or actual (closed) close date.",
					"amount":         "Deal value in EUR.",
				}},
		},
		"metrics": []map[string]any{
			{"name": "open_pipeline_value", "port": "pipeline", "description": "Value (EUR) of the opportunities not yet won or lost.",
				"expr": "sum(amount)", "filter": "stage NOT IN ('Closed Won', 'Closed Lost')",
				"time_column": "close_date", "grains": []string{"month", "quarter", "year"}, "dimensions": []string{"region", "industry", "stage"}},
			{"name": "win_rate", "port": "pipeline", "description": "Share of closed opportunities that were won.",
				"expr": "sum(CASE WHEN stage = 'Closed Won' THEN 1 ELSE 0 END) * 1.0 / nullif(count(*), 0)", "filter": "stage IN ('Closed Won', 'Closed Lost')",
				"time_column": "close_date", "grains": []string{"month", "quarter", "year"}, "dimensions": []string{"region", "industry"}},
		},
		"expectations": []map[string]any{
			{"name": "opportunities_fresh", "kind": "freshness", "port": "opportunities", "max_age": "7d"},
			{"name": "opportunities_not_empty", "kind": "row_count", "port": "opportunities", "min": 1},
			{"name": "opportunity_ids_unique", "kind": "unique", "port": "opportunities", "column": "opportunity_id"},
			{"name": "amount_not_null", "kind": "not_null", "port": "opportunities", "column": "amount"},
			{"name": "known_stages", "kind": "accepted_values", "port": "opportunities", "column": "stage",
				"values": []string{"Prospecting", "Qualification", "Proposal", "Negotiation", "Closed Won", "Closed Lost"}},
		},
	}
}

// stewardGrants are the steward's privileges: what its views read, and
// the right to create them.
var stewardGrants = []map[string]any{
	{"privilege": "SELECT", "on": map[string]any{"kind": "table", "namespace": []string{Namespace}, "name": "accounts"}},
	{"privilege": "SELECT", "on": map[string]any{"kind": "table", "namespace": []string{Namespace}, "name": "opportunities"}},
	{"privilege": "CREATE_VIEW", "on": map[string]any{"kind": "namespace", "namespace": []string{Namespace}}},
}

// PublishProduct creates the steward principal (Steward) with its grants,
// the demo product's views as the steward through the query API (definer
// rights), and publishes the sales_pipeline product through the
// management API at uri (with the administrator's bearer token) in
// warehouse, unless they exist. tokenFor issues an access token for a
// principal (the steward). It needs the SQL engine.
func PublishProduct(ctx context.Context, uri, warehouse, token string, tokenFor func(ctx context.Context, principal string) (string, error), roots *x509.CertPool) error {
	client := &http.Client{Timeout: time.Minute}
	if roots != nil {
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	}
	call := func(method, path string, body any) (int, []byte, error) {
		return send(ctx, client, uri, token, method, path, body)
	}
	var steward string
	for _, v := range productViews {
		st, _, err := call("HEAD", "/v1/"+url.PathEscape(warehouse)+"/namespaces/"+Namespace+"/views/"+v.name, nil)
		if err != nil {
			return fmt.Errorf("demo: view %s: %w", v.name, err)
		}
		if st == http.StatusNoContent || st == http.StatusOK {
			continue // created by an earlier start
		}
		if steward == "" {
			if steward, err = makeSteward(ctx, call, tokenFor); err != nil {
				return err
			}
		}
		if st, out, err := send(ctx, client, uri, steward, "POST", "/api/v1/query", map[string]any{"sql": v.sql}); err != nil {
			return fmt.Errorf("demo: create view %s: %w", v.name, err)
		} else if st != http.StatusOK {
			return fmt.Errorf("demo: create view %s: %d %s", v.name, st, out)
		}
	}
	st, out, err := call("POST", "/api/v1/products", productDefinition())
	switch {
	case err != nil:
		return fmt.Errorf("demo: publish product: %w", err)
	case st == http.StatusCreated || st == http.StatusConflict: // published now, or by an earlier start
		return nil
	}
	return fmt.Errorf("demo: publish product: %d %s", st, out)
}

// makeSteward creates the steward principal (unless it exists) and its
// grants, and returns an access token for it.
func makeSteward(ctx context.Context, call func(method, path string, body any) (int, []byte, error),
	tokenFor func(ctx context.Context, principal string) (string, error)) (string, error) {
	st, out, err := call("POST", "/api/v1/principals", map[string]any{"name": Steward})
	if err != nil {
		return "", fmt.Errorf("demo: create principal %s: %w", Steward, err)
	}
	if st != http.StatusCreated && st != http.StatusConflict {
		return "", fmt.Errorf("demo: create principal %s: %d %s", Steward, st, out)
	}
	for _, g := range stewardGrants {
		body := map[string]any{"grantee": map[string]any{"kind": "principal", "name": Steward}}
		for k, v := range g {
			body[k] = v
		}
		st, out, err := call("POST", "/api/v1/grants", body)
		if err != nil {
			return "", fmt.Errorf("demo: grant %s to %s: %w", g["privilege"], Steward, err)
		}
		if st != http.StatusCreated && st != http.StatusOK && st != http.StatusConflict {
			return "", fmt.Errorf("demo: grant %s to %s: %d %s", g["privilege"], Steward, st, out)
		}
	}
	tok, err := tokenFor(ctx, Steward)
	if err != nil {
		return "", fmt.Errorf("demo: a token for %s: %w", Steward, err)
	}
	return tok, nil
}

// send makes one JSON request to uri+path with a bearer token.
func send(ctx context.Context, client *http.Client, uri, token, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, uri+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, out, err
}
