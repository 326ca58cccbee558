// Package objstore holds Floe's storage backends. Subpackage local keeps
// objects as plain files under a root directory.
package objstore
