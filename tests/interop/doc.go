// Package interop holds tests that drive Floe with real external clients:
// apache/iceberg-go's REST client here, PyIceberg under python/.
package interop
