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

// LocationPrefix splits a table location s3://bucket/key (also s3a://,
// s3n://) into its bucket and the key prefix of everything under it, with
// one trailing slash; ok is false for a location that is not on S3 or is
// a bucket's root. The key is literal, as engines use it.
func LocationPrefix(loc string) (bucket, prefix string, ok bool) {
	bucket, key, err := ParseLocation(loc)
	p := strings.Trim(key, "/")
	if err != nil || p == "" {
		return "", "", false
	}
	return bucket, p + "/", true
}
