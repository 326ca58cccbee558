package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// tokenSource holds the current OAuth2 access token. sem lets one caller
// fetch at a time while the others wait (or give up with their context).
type tokenSource struct {
	sem     chan struct{}
	mu      sync.Mutex
	token   string
	renewAt time.Time
}

// bearer returns the token to send: "" for auth none, the static token for
// bearer, and for oauth2 the current token, fetched or renewed when 60% of
// its lifetime has passed or when it equals stale (the remote refused it).
func (c *Client) bearer(ctx context.Context, stale string) (string, error) {
	switch c.o.Auth.Kind {
	case "bearer":
		return c.o.Auth.Token, nil
	case "oauth2":
	default:
		return "", nil
	}
	ts := &c.tok
	usable := func() (string, bool) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if ts.token != "" && ts.token != stale && c.o.Now().Before(ts.renewAt) {
			return ts.token, true
		}
		return "", false
	}
	if t, ok := usable(); ok {
		return t, nil
	}
	select {
	case ts.sem <- struct{}{}:
	case <-ctx.Done():
		return "", c.transportError(ctx.Err())
	}
	defer func() { <-ts.sem }()
	if t, ok := usable(); ok { // another caller renewed it meanwhile
		return t, nil
	}
	tok, life, err := c.fetchToken(ctx)
	if err != nil {
		return "", err
	}
	ts.mu.Lock()
	ts.token = tok
	if life > 0 {
		ts.renewAt = c.o.Now().Add(life * 6 / 10)
	} else {
		ts.renewAt = c.o.Now().Add(DefaultTokenLifetime)
	}
	ts.mu.Unlock()
	c.log.DebugContext(ctx, "foreign catalog token obtained", "catalog", c.o.Name, "lifetime", life)
	return tok, nil
}

// fetchToken runs the client-credentials grant (client_secret_post).
func (c *Client) fetchToken(ctx context.Context) (string, time.Duration, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.o.Auth.ClientID},
		"client_secret": {c.o.Auth.ClientSecret}, "scope": {c.o.Auth.Scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, c.unavailable(fmt.Errorf("token request: %w", err), "invalid token URL")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	for k, vs := range c.o.Header {
		if _, set := req.Header[k]; !set {
			req.Header[k] = vs
		}
	}
	var tr struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
	}
	o := op{name: "getToken", method: http.MethodPost, path: req.URL.EscapedPath(), limit: 1 << 20}
	o.parse = func(r *response) error {
		if err := c.decode(o, r, &tr); err != nil {
			return err
		}
		if tr.AccessToken == "" {
			return c.unavailable(fmt.Errorf("token endpoint: no access_token"), "token endpoint answered without an access token")
		}
		return nil
	}
	resp, err := c.exchange(ctx, o, req)
	if err != nil {
		return "", 0, err
	}
	if resp.status != http.StatusOK {
		if resp.status == http.StatusBadRequest || resp.status == http.StatusUnauthorized || resp.status == http.StatusForbidden {
			msg := remoteMessage(resp.body)
			if msg != "" {
				msg = ": " + msg
			}
			return "", 0, c.refused(fmt.Errorf("token endpoint: HTTP %d", resp.status),
				"foreign catalog %s refused Floe's credentials (token endpoint HTTP %d)%s", c.o.Name, resp.status, msg)
		}
		return "", 0, c.statusError(o, resp)
	}
	return tr.AccessToken, expiresIn(tr.ExpiresIn), nil
}

// expiresIn reads expires_in (seconds, a number or a numeric string);
// absent or unusable: 0.
func expiresIn(raw json.RawMessage) time.Duration {
	s := strings.Trim(string(raw), `"`)
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n <= 0 || n > 365*24*3600 {
		return 0
	}
	return time.Duration(n * float64(time.Second))
}
