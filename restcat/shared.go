package restcat

import "github.com/floe-lake/floe/vend"

// ClientConfig is the static S3 client configuration a LoadTableResult
// carries with vended credentials (endpoint, path style, region), for
// other catalogs that vend like this one (the share catalogs).
func (v *Vending) ClientConfig() map[string]string { return v.clientConfig() }

// CredentialConfig is the LoadTableResult config of a vended credential
// (s3.access-key-id, s3.secret-access-key, s3.session-token and its expiry).
func CredentialConfig(c vend.Credentials) map[string]string { return credentialConfig(c) }
