// Package bucket is the storage engine behind Floe's embedded S3 endpoint
// (package s3api holds the HTTP side). Each bucket is a directory; an object
// is the plain file <root>/<key> (encrypted with package sse when the store
// encrypts), so Floe's own engines read the same files directly.
//
// # Keys
//
// Keys are UTF-8, 1..1024 bytes, with no NUL or backslash, no leading "/",
// and no empty, "." or ".." segment; segments starting with ".floe-" are
// reserved. Every file access goes through an os.Root per bucket, so no key
// and no symbolic link planted in the tree reaches outside the root. A key
// ending in "/" (a zero-byte "folder" object from Hadoop, Spark or a
// console) is stored as the reserved file "<dir>/.floe-dir" and listed as
// "dir/".
//
// Limitation: objects are files, so a key cannot also be a "directory" of
// other keys. Storing "a/b" while "a" exists, or "a" while "a/b" exists,
// fails with KeyConflict (409). Iceberg, Hadoop and Spark layouts never do
// this.
//
// # Writes
//
// Put streams the body into a staging file in TempDir (same file system),
// hashing it on the way, fsyncs it, records metadata, and renames it into
// place (then fsyncs the directory): readers see the old object or the new
// one, never part of one. If-None-Match "*" publishes with link(2) instead,
// which fails atomically if the key exists, even against other processes;
// If-Match and ETag-valued If-None-Match are checked under a per-key lock,
// so they are atomic only against writers in this process. A crash leaves
// at most staging files, which New removes once they are an hour old.
//
// # Metadata
//
// The ETag is the 128-bit xxh3 hash of the plaintext in hex (multipart:
// the hash of the part hashes, then "-<parts>"). ETag, content type, user
// metadata, checksums and the encryption flag live in the xattr
// "user.floe.s3" together with the file's size and mtime. A file without it
// (written by another program, or on a file system without user xattrs), or
// whose size or mtime changed since, gets a derived ETag (hash of size and
// mtime) and the default content type; encryption is then recognised by the
// sse header magic.
//
// # Listing
//
// List walks the tree in S3 key order: each directory's entries are sorted
// by name, with directories compared as name+"/" (so "a-c" < "a/b", as in
// S3). The prefix and start key prune the walk, and with a delimiter a
// whole directory becomes one common prefix without being read. Only one
// directory's entries per level are in memory.
//
// # Multipart uploads
//
// Parts are files in TempDir/uploads/<uploadID>/ named "<n>.<etag>"; upload
// metadata sits beside them. CompleteMultipart validates the part list and
// streams the parts into a staging file (copy_file_range for plaintext,
// decrypt-then-encrypt when encrypting), then publishes it like Put. Memory
// per upload is one pooled 256 KiB buffer, whatever the object size.
//
// # Errors
//
// Client-visible failures are *Error values carrying the S3 code and HTTP
// status (NoSuchKey 404, PreconditionFailed 412, KeyConflict 409, ...),
// possibly wrapped; anything else is an internal error.
package bucket
