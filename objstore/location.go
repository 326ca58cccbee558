package objstore

import (
	"strings"

	"github.com/floe-lake/floe"
)

// ParseLocation splits "s3://bucket/key" (or s3a://, s3n://) into bucket and
// key. The key is taken literally, as S3 clients do: "%20" in a location is
// part of the key, not an escaped space. The key may be empty ("s3://bucket"
// or "s3://bucket/").
func ParseLocation(location string) (bucket, key string, err error) {
	rest, ok := "", false
	for _, scheme := range []string{"s3://", "s3a://", "s3n://"} {
		if len(location) >= len(scheme) && strings.EqualFold(location[:len(scheme)], scheme) {
			rest, ok = location[len(scheme):], true
			break
		}
	}
	if !ok {
		return "", "", floe.E(floe.Invalid, "", "location %q is not an s3:// URI", location)
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", floe.E(floe.Invalid, "", "location %q names no bucket", location)
	}
	return bucket, key, nil
}
