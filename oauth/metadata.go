package oauth

import (
	"net/http"
	"net/url"
	"strings"
)

// Metadata is the RFC 8414 authorization server metadata document; the
// OpenID discovery document adds the OpenID Connect Discovery fields.
type Metadata struct {
	Issuer                              string   `json:"issuer"`
	TokenEndpoint                       string   `json:"token_endpoint"`
	JWKSURI                             string   `json:"jwks_uri"`
	RevocationEndpoint                  string   `json:"revocation_endpoint"`
	GrantTypesSupported                 []string `json:"grant_types_supported"`
	ResponseTypesSupported              []string `json:"response_types_supported"`
	TokenEndpointAuthMethodsSupported   []string `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgs        []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	RevocationEndpointAuthMethods       []string `json:"revocation_endpoint_auth_methods_supported"`
	RevocationEndpointAuthSigningAlgs   []string `json:"revocation_endpoint_auth_signing_alg_values_supported"`
	ScopesSupported                     []string `json:"scopes_supported"`
	ClaimsSupported                     []string `json:"claims_supported,omitempty"`
	SubjectTypesSupported               []string `json:"subject_types_supported,omitempty"`
	IDTokenSigningAlgValuesSupported    []string `json:"id_token_signing_alg_values_supported,omitempty"`
	ServiceDocumentation                string   `json:"service_documentation,omitempty"`
	TokenExchangeSubjectTokenTypes      []string `json:"token_exchange_subject_token_types_supported,omitempty"`
	AuthorizationResponseIssParameterOK bool     `json:"authorization_response_iss_parameter_supported,omitempty"`
}

// metadata returns the document for the current issuer.
func (h *Handler) metadata(openid bool) Metadata {
	iss := h.auth.Issuer()
	auths := []string{methodBasic, methodPost, methodJWT}
	algs := []string{"RS256", "ES256"}
	m := Metadata{
		Issuer:                            iss,
		TokenEndpoint:                     iss + TokenPath,
		JWKSURI:                           iss + JWKSPath,
		RevocationEndpoint:                iss + RevokePath,
		GrantTypesSupported:               []string{GrantClientCredentials, GrantTokenExchange, GrantJWTBearer},
		ResponseTypesSupported:            []string{},
		TokenEndpointAuthMethodsSupported: auths,
		TokenEndpointAuthSigningAlgs:      algs,
		RevocationEndpointAuthMethods:     auths,
		RevocationEndpointAuthSigningAlgs: algs,
		ScopesSupported:                   []string{"catalog", "catalog:read"},
		TokenExchangeSubjectTokenTypes:    []string{TokenTypeAccessToken, TokenTypeJWT, TokenTypeIDToken},
	}
	if openid {
		m.SubjectTypesSupported = []string{"public"}
		m.IDTokenSigningAlgValuesSupported = []string{"ES256", "RS256"}
		m.ClaimsSupported = []string{"iss", "sub", "aud", "exp", "iat", "nbf", "jti", "client_id", "name", "scope"}
	}
	return m
}

// serveMetadata serves RFC 8414 metadata (at /.well-known/oauth-authorization-server,
// or with the issuer's path appended when it has one) or OpenID discovery.
func (h *Handler) serveMetadata(openid bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !openid {
			suffix := strings.TrimPrefix(r.URL.Path, MetadataPath)
			path := ""
			if u, err := url.Parse(h.auth.Issuer()); err == nil {
				path = strings.TrimSuffix(u.Path, "/")
			}
			if suffix != "" && suffix != path {
				writeJSON(w, http.StatusNotFound, oerr(http.StatusNotFound, "invalid_request", "no metadata for issuer path "+quote(suffix)))
				return
			}
		}
		writeCacheable(w, h.metadata(openid))
	}
}

func (h *Handler) serveJWKS(w http.ResponseWriter, r *http.Request) {
	set, err := h.auth.JWKS(r.Context())
	if err != nil {
		h.log.ErrorContext(r.Context(), "oauth: JWKS", "err", err)
		writeJSON(w, http.StatusInternalServerError, oerr(http.StatusInternalServerError, "server_error", "internal error"))
		return
	}
	writeCacheable(w, set)
}

// writeCacheable sends a public document clients may cache for 5 minutes.
func writeCacheable(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.WriteHeader(http.StatusOK)
	_ = jsonEncode(w, v)
}
