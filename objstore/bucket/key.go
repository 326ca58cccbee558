package bucket

import (
	"strings"
	"unicode/utf8"
)

const (
	// MaxKeyLen is the longest key in bytes (as in S3).
	MaxKeyLen = 1024
	// maxSegmentLen is the longest path segment most file systems accept.
	maxSegmentLen = 255
	// reservedPrefix starts every file or directory name the store keeps for
	// itself; keys with such a segment are rejected.
	reservedPrefix = ".floe-"
	// dirMarker is the file that stands for a key ending in "/" (a "folder"
	// object as Hadoop, Spark and consoles create them).
	dirMarker = reservedPrefix + "dir"
)

// ValidateKey checks that key can be stored as a file path: valid UTF-8,
// 1..1024 bytes, no NUL or backslash, no leading "/", no empty, "." or ".."
// segment, no segment over 255 bytes and no segment starting with ".floe-"
// (reserved). A single trailing "/" is allowed: such a key is a folder
// marker. The error is an *Error (InvalidArgument or KeyTooLongError).
func ValidateKey(key string) error {
	switch {
	case key == "":
		return errorf(CodeInvalidArgument, "empty object key")
	case len(key) > MaxKeyLen:
		return errorf(CodeKeyTooLong, "object key is %d bytes; the limit is %d", len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return errorf(CodeInvalidArgument, "object key is not valid UTF-8")
	case strings.IndexByte(key, 0) >= 0:
		return errorf(CodeInvalidArgument, "object key contains a NUL byte")
	case strings.IndexByte(key, '\\') >= 0:
		return errorf(CodeInvalidArgument, "object key contains a backslash")
	case key[0] == '/':
		return errorf(CodeInvalidArgument, "object key starts with \"/\"")
	}
	rest := strings.TrimSuffix(key, "/")
	for seg := range strings.SplitSeq(rest, "/") {
		switch {
		case seg == "":
			return errorf(CodeInvalidArgument, "object key %q has an empty path segment", key)
		case seg == "." || seg == "..":
			return errorf(CodeInvalidArgument, "object key %q has a %q path segment", key, seg)
		case len(seg) > maxSegmentLen:
			return errorf(CodeKeyTooLong, "object key %q has a path segment over %d bytes", key, maxSegmentLen)
		case strings.HasPrefix(seg, reservedPrefix):
			return errorf(CodeInvalidArgument, "object key %q uses the reserved name %q", key, seg)
		}
	}
	return nil
}

// filePath maps a valid key to its file path relative to the bucket root:
// the key itself, or "<dir>/.floe-dir" for a folder marker "dir/".
func filePath(key string) string {
	if strings.HasSuffix(key, "/") {
		return key + dirMarker
	}
	return key
}

// splitPath splits a relative file path into its directory ("." for the
// root) and base name.
func splitPath(p string) (dir, base string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ".", p
	}
	return p[:i], p[i+1:]
}

// validBucketName reports whether name follows the S3 bucket naming rules
// (3..63 characters of a-z, 0-9, '.', '-', starting and ending with a letter
// or digit, no "..").
func validBucketName(name string) bool {
	if len(name) < 3 || len(name) > 63 || strings.Contains(name, "..") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '.' && c != '-' || i == 0 || i == len(name)-1) {
			return false
		}
	}
	return true
}
