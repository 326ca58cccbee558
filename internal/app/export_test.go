package app

import "context"

// CertTokens is the number of cached certificate-principal tokens and its
// bound (for tests of the bound).
func (a *App) CertTokens() (n, max int) {
	if a.tls == nil || a.tls.tokens == nil {
		return 0, 0
	}
	a.tls.tokens.mu.Lock()
	defer a.tls.tokens.mu.Unlock()
	return len(a.tls.tokens.tokens), a.tls.tokens.max
}

// CertToken returns a token for principal name through the certificate
// token cache.
func (a *App) CertToken(ctx context.Context, name string) (string, error) {
	return a.tls.tokens.get(ctx, name)
}
