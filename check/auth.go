package check

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Token lifetime thresholds (S3).
const (
	// MaxTokenLifetime is the longest access-token lifetime that passes.
	MaxTokenLifetime = time.Hour
)

// checkClientCredentials (S3): the client-credentials grant at the token
// endpoint answers an access token.
func (r *run) checkClientCredentials(ctx context.Context) {
	r.tokenURL = r.o.TokenURL
	if r.tokenURL == "" {
		r.tokenURL = r.base + "/v1/oauth/tokens"
	}
	switch {
	case r.o.Token != "" && r.o.Credential == "":
		r.token = r.o.Token
		r.add("S3", "s3.client-credentials", Skip, "a bearer token was given (--token), no client credential to try")
		return
	case r.o.Credential == "":
		r.add("S3", "s3.client-credentials", Skip, "no --credential or --token: checking anonymously")
		return
	}
	ta, a := r.clientToken(ctx, r.o.Credential, "catalog")
	if a.err == nil && a.status == http.StatusBadRequest && ta.Error == "invalid_scope" {
		ta, a = r.clientToken(ctx, r.o.Credential, "")
	}
	if a.err != nil || a.status != http.StatusOK || ta.AccessToken == "" {
		r.add("S3", "s3.client-credentials", Fail, "POST %s (grant_type=client_credentials): %s", r.tokenURL, a.describe())
		if r.o.Token != "" {
			r.token = r.o.Token
		}
		return
	}
	r.token, r.tokenLife = ta.AccessToken, expiresIn(ta.ExpiresIn)
	r.add("S3", "s3.client-credentials", Pass, "POST %s (grant_type=client_credentials) answered a %s token", r.tokenURL, orDefault(ta.TokenType, "bearer"))
}

// checkTokenLifetime (S3): expires_in is present and at most an hour.
func (r *run) checkTokenLifetime(context.Context) {
	const refresh = "clients renew at about 60% of expires_in (client credentials again, or a token exchange of the current token)"
	switch {
	case r.token == "" || r.o.Credential == "":
		r.add("S3", "s3.token-lifetime", Skip, "no token obtained from the token endpoint")
	case r.tokenLife == 0:
		r.add("S3", "s3.token-lifetime", Warn, "the token answer has no expires_in: clients cannot tell when to refresh")
	case r.tokenLife > MaxTokenLifetime:
		r.add("S3", "s3.token-lifetime", Warn, "expires_in %s is longer than %s: a leaked token stays usable that long", r.tokenLife, MaxTokenLifetime)
	default:
		r.add("S3", "s3.token-lifetime", Pass, "expires_in %s (≤ %s); %s", r.tokenLife, MaxTokenLifetime, refresh)
	}
}

// checkTokenExchange (S3): an RFC 8693 exchange of the access token for
// a new one works, when the server offers the grant.
func (r *run) checkTokenExchange(ctx context.Context) {
	if r.token == "" {
		r.add("S3", "s3.token-exchange", Skip, "no access token to exchange")
		return
	}
	form := url.Values{
		"grant_type":         {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token":      {r.token},
		"subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"scope":              {"catalog"},
	}
	ta, a := r.postToken(ctx, form)
	switch {
	case a.err != nil:
		r.add("S3", "s3.token-exchange", Fail, "POST %s (token-exchange): %s", r.tokenURL, a.describe())
	case a.status == http.StatusOK && ta.AccessToken != "":
		r.add("S3", "s3.token-exchange", Pass, "RFC 8693 exchange of the access token answered a new token (expires_in %s)", fmtLife(expiresIn(ta.ExpiresIn)))
	case ta.Error == "unsupported_grant_type" || a.status == http.StatusNotFound:
		r.add("S3", "s3.token-exchange", Skip, "the token endpoint does not offer RFC 8693 token exchange (%s)", a.describe())
	default:
		r.add("S3", "s3.token-exchange", Fail, "RFC 8693 exchange of a valid access token refused: %s", a.describe())
	}
}

func fmtLife(d time.Duration) string {
	if d == 0 {
		return "absent"
	}
	return d.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// detectFloe asks Floe's management API who the caller is: a 200 with a
// principal means the server is Floe (evidence only, never a finding).
func (r *run) detectFloe(ctx context.Context) {
	a := r.call(ctx, r.token, http.MethodGet, "/api/v1/whoami", nil)
	if a.err == nil && a.status == http.StatusOK && jsonHas(a.body, "principal") {
		r.floe = true
		r.rep.Floe = true
	}
	r.o.Logger.DebugContext(ctx, "server detection", "floe", r.floe, "whoami", fmt.Sprint(a.status))
}
