package catalog

import "context"

// FileIO reads and writes metadata files. Locations are URIs such as
// file:///path or s3://bucket/key.
type FileIO interface {
	// ReadFile returns the whole object, or a NotFound error.
	ReadFile(ctx context.Context, location string) ([]byte, error)
	// WriteFile atomically writes a new object; readers never see part of it.
	WriteFile(ctx context.Context, location string, data []byte) error
	// Delete removes one object; a missing object is not an error.
	Delete(ctx context.Context, location string) error
	// DeletePrefix removes every object under a location prefix.
	DeletePrefix(ctx context.Context, prefix string) error
}

// Stater is implemented by FileIOs that can cheaply tell whether an object
// exists. The catalog then checks that a cached metadata file still exists
// before serving it, so that a file removed behind its back is reported as
// missing (as Iceberg's compatibility kit expects).
type Stater interface {
	Exists(ctx context.Context, location string) (bool, error)
}
