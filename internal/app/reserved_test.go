package app

import (
	"strings"
	"testing"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/catalog"
)

// TestSealsInReservedPrefix: the audit checkpoints live where no table may
// be located, so no vended credential ever covers them.
func TestSealsInReservedPrefix(t *testing.T) {
	if !strings.HasPrefix(audit.SealPrefix, catalog.ReservedPrefix+"/") {
		t.Fatalf("audit.SealPrefix %q is outside the catalog's reserved %q", audit.SealPrefix, catalog.ReservedPrefix)
	}
}
