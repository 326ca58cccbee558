package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	floe "github.com/floe-lake/floe"
)

// Remote signing keys of a LoadTableResult config (the Iceberg REST S3
// signer).
const (
	ConfigRemoteSigning  = "s3.remote-signing-enabled"
	ConfigSignerURI      = "s3.signer.uri"
	ConfigSignerEndpoint = "s3.signer.endpoint"
)

// signerSecretKeys are config keys of a remote-signing answer that carry
// this client's own identity (a remote hands the caller's token back for
// its signer to use): never kept, never passed on.
var signerSecretKeys = []string{"token", "credential"}

// LoadTableSigning loads a table asking the remote for remote signing
// (X-Iceberg-Access-Delegation: remote-signing): the answer's config names
// the remote's signer and no storage credential. Any token the remote puts
// in the config (this client's own) is removed. The answer is cached like a
// describe-only load.
func (c *Client) LoadTableSigning(ctx context.Context, ns []string, name string) (*LoadTableResult, error) {
	p, err := c.objectPath(ctx, ns, "table", name)
	if err != nil {
		return nil, err
	}
	o := op{name: "loadTable", method: http.MethodGet, path: p, limit: maxTableBody, header: http.Header{},
		entity: "table", object: "table " + Ident{ns, name}.String()}
	o.header.Set("X-Iceberg-Access-Delegation", "remote-signing")
	v, err := c.load(ctx, o, "table-signing\x00"+p, true, c.parseLoadTable(o, signerSecretKeys))
	if err != nil {
		return nil, err
	}
	return copyTable(v.(*LoadTableResult), true), nil
}

// Sign forwards one request of the Iceberg REST S3 signer protocol (body:
// region, uri, method, headers, ...) to the signer that cfg (a
// LoadTableSigning answer's config) names, with this client's identity,
// and returns the remote's answer (uri and signed headers). The signer
// must live under the catalog's own base URI: a remote cannot point Floe
// elsewhere. Errors keep the remote's meaning as a forwarded write's do
// (400 Invalid, 403 Forbidden: the remote refused the request), transport
// failures and 5xx are Unavailable.
func (c *Client) Sign(ctx context.Context, cfg map[string]string, body []byte) (json.RawMessage, error) {
	if cfg[ConfigRemoteSigning] != "true" {
		return nil, floe.E(floe.Unsupported, "", "foreign catalog %s does not sign requests for this table", c.o.Name)
	}
	endpoint := cfg[ConfigSignerEndpoint]
	if endpoint == "" {
		endpoint = "v1/aws/s3/sign" // the REST signer's default
	}
	uri := strings.TrimRight(cfg[ConfigSignerURI], "/")
	if uri == "" {
		uri = c.base
	}
	full := uri + "/" + strings.TrimLeft(endpoint, "/")
	if !strings.HasPrefix(full, c.base+"/") {
		return nil, c.unavailable(fmt.Errorf("signer %q outside %q", full, c.base), "its signer is not under the catalog's own URI")
	}
	path := full[len(c.base):]
	if !relativePath(path[1:]) {
		return nil, c.unavailable(fmt.Errorf("signer path %q", path), "its signer path is invalid")
	}
	// Its errors keep the remote's meaning, as a forwarded write's: a 403
	// is the remote refusing this request, not Floe's identity.
	o := op{name: "signRequest", method: http.MethodPost, path: path, limit: maxBody, header: http.Header{}, body: body,
		entity: "table", object: "signer", write: true}
	o.header.Set("Content-Type", "application/json")
	resp, err := c.do(ctx, o)
	if err != nil {
		return nil, err
	}
	if resp.status == http.StatusNotModified || !isJSONObject(resp.body) {
		return nil, c.unavailable(fmt.Errorf("signRequest: HTTP %d, not a JSON object", resp.status), "malformed signer answer")
	}
	return resp.body, nil
}
