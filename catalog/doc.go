// Package catalog is Floe's catalog domain: warehouses, namespaces, tables and
// views, and the commit protocol that turns requirements plus updates into a
// new metadata file and an atomic swap of the metadata pointer.
//
// It uses apache/iceberg-go's metadata types and builders for the table and
// view specs, and declares the two interfaces it needs from the outside world:
// Store (metadata persistence with compare-and-swap) and FileIO (metadata file
// reads and writes). It imports no HTTP, SQL driver or cloud SDK.
package catalog
