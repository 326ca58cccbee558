package bench

import "encoding/base64"

// encodeToken builds a page token the way the server does (an opaque value to
// clients; the benchmark uses it to start listings at a chosen depth).
func encodeToken(last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("k1:" + last))
}
