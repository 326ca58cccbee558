package restcat

import (
	"encoding/base64"

	"github.com/floe-lake/floe"
)

// Page tokens are the base64url of the last key returned, so a page is found
// by an index seek and latency stays flat however deep the listing goes.
func encodePageToken(last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("k1:" + last))
}

func decodePageToken(tok string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < 3 || string(b[:3]) != "k1:" {
		return "", floe.E(floe.Invalid, "", "invalid pageToken")
	}
	return string(b[3:]), nil
}
