package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/mgmtapi"
)

// DefaultURL is the server the ingest commands talk to without --url.
const DefaultURL = "http://127.0.0.1:8181"

// apiClient is the management API connection of commands that run
// through a Floe server: --url (FLOE_URL) and a bearer token from --token
// (FLOE_TOKEN) or obtained with --credential (FLOE_CREDENTIAL).
type apiClient struct {
	url, token, credential string
	// defaultURL is used without --url and FLOE_URL; "" means such a
	// command works in process instead (remote reports false).
	defaultURL string
	getenv     func(string) string
	http       *http.Client
}

// bindAPIClient adds the connection flags to fs; urlHelp describes --url.
func bindAPIClient(fs *pflag.FlagSet, getenv func(string) string, defaultURL, urlHelp string) *apiClient {
	c := &apiClient{getenv: getenv, defaultURL: defaultURL, http: &http.Client{}}
	fs.StringVar(&c.url, "url", "", urlHelp)
	fs.StringVar(&c.token, "token", "", "bearer token (env FLOE_TOKEN)")
	fs.StringVar(&c.credential, "credential", "", "client_id:client_secret to obtain a token (env FLOE_CREDENTIAL)")
	return c
}

// base is the server URL without a trailing slash ("" for none).
func (c *apiClient) base() string {
	u := c.url
	if u == "" {
		u = c.getenv("FLOE_URL")
	}
	if u == "" {
		u = c.defaultURL
	}
	return strings.TrimSuffix(u, "/")
}

// remote reports whether the command talks to a server.
func (c *apiClient) remote() bool { return c.base() != "" }

// orLocal runs a command on the server c names (remote, given the
// configured warehouse) or, without one, in process on the data directory
// (local, as the operator).
func (c *apiClient) orLocal(cmd *cobra.Command, load func() (app.Config, error), stderr io.Writer,
	remote func(warehouse string) error, local func(a *app.App) error) error {
	if c.remote() {
		cfg, err := load()
		if err != nil {
			return err
		}
		return remote(cfg.Warehouse)
	}
	a, err := openApp(cmd, load, stderr)
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	return local(a)
}

// bearer returns --token, FLOE_TOKEN, or a token obtained with the client
// credentials of --credential or FLOE_CREDENTIAL.
func (c *apiClient) bearer(ctx context.Context) (string, error) {
	for _, t := range []string{c.token, c.getenv("FLOE_TOKEN")} {
		if t != "" {
			return t, nil
		}
	}
	cred := c.credential
	if cred == "" {
		cred = c.getenv("FLOE_CREDENTIAL")
	}
	id, secret, ok := strings.Cut(cred, ":")
	if !ok || id == "" {
		return "", floe.E(floe.Invalid, "", "give --token or --credential client_id:client_secret (or FLOE_TOKEN, FLOE_CREDENTIAL)")
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {"catalog"}}
	req, err := http.NewRequestWithContext(ctx, "POST", c.base()+"/v1/oauth/tokens", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("token request to %s: %w", c.base(), err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out) != nil || out.AccessToken == "" {
		return "", fmt.Errorf("token request to %s: status %d", c.base(), resp.StatusCode)
	}
	return out.AccessToken, nil
}

// do sends a request to the management API (body of size bytes, -1 when
// unknown) and decodes the JSON answer into out; an error answer becomes
// an error with the server's message. An out of type *[]byte receives the
// answer's bytes as they are.
func (c *apiClient) do(ctx context.Context, method, path string, body io.Reader, size int64, contentType string, out any) error {
	tok, err := c.bearer(ctx)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base()+path, body)
	if err != nil {
		return err
	}
	if size >= 0 {
		req.ContentLength = size
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, c.base()+path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e httperr.Response
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return floe.E(kindOfAnswer(resp.StatusCode, e.Error.Type), "", "%s (%d %s)", e.Error.Message, e.Error.Code, e.Error.Type)
		}
		return floe.E(kindOfAnswer(resp.StatusCode, ""), "", "%s %s: status %d: %.300s", method, path, resp.StatusCode, b)
	}
	if out == nil || len(b) == 0 {
		return nil // 204 No Content, or an answer the caller does not read
	}
	if raw, ok := out.(*[]byte); ok { // an answer that is not JSON (CSV)
		*raw = b
		return nil
	}
	return json.Unmarshal(b, out)
}

// kindOfAnswer is the error kind of a server's error answer (status and
// Iceberg ErrorModel type), so that commands can tell "exists already" or
// "not found" from other failures.
func kindOfAnswer(status int, typ string) floe.Kind {
	switch typ {
	case "AlreadyExistsException":
		return floe.AlreadyExists
	case "NamespaceNotEmptyException":
		return floe.NotEmpty
	case "CommitFailedException":
		return floe.Conflict
	case "CommitStateUnknownException":
		return floe.Indeterminate
	}
	switch {
	case status == http.StatusBadRequest:
		return floe.Invalid
	case status == http.StatusUnauthorized:
		return floe.Unauthenticated
	case status == http.StatusForbidden:
		return floe.Forbidden
	case status == http.StatusNotFound:
		return floe.NotFound
	case status == http.StatusConflict:
		return floe.Conflict
	case status == http.StatusNotAcceptable || status == http.StatusNotImplemented:
		return floe.Unsupported
	case status == http.StatusServiceUnavailable:
		return floe.Unavailable
	case status == http.StatusUnprocessableEntity:
		return floe.Unprocessable
	}
	return floe.Internal
}

// call sends body (nil for none) as JSON and decodes the answer into out.
func (c *apiClient) call(ctx context.Context, method, path string, body, out any) error {
	if body == nil {
		return c.do(ctx, method, path, nil, 0, "", out)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.do(ctx, method, path, bytes.NewReader(b), int64(len(b)), "application/json", out)
}

// tableURL is the management API path of a table.
func tableURL(wh string, id catalog.Ident) string {
	return "/api/v1/tables/" + url.PathEscape(wh) + "/" + url.PathEscape(strings.Join(id.Namespace, catalog.Sep)) + "/" + url.PathEscape(id.Name)
}

// tableArg reads NS.TABLE (levels separated by ".").
func tableArg(s string) (catalog.Ident, error) {
	levels := mgmtapi.ParseNamespace(s)
	if len(levels) < 2 {
		return catalog.Ident{}, floe.E(floe.Invalid, "table", "a table is named namespace.name, e.g. crm.accounts (got %q)", s)
	}
	id := catalog.Ident{Namespace: levels[:len(levels)-1], Name: levels[len(levels)-1]}
	return id, id.Validate()
}
