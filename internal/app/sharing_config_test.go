package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-lake/floe/sharing"
)

// TestSharingConfig: the sharing limits come from YAML and FLOE_* (env
// over YAML), default to the service's defaults, and are validated.
func TestSharingConfig(t *testing.T) {
	if got := Defaults().Sharing.Limits(); got != (sharing.Limits{Shares: 1000, ObjectsPerShare: 1000, Recipients: 10000, TokensPerRecipient: 5}) {
		t.Errorf("default limits %+v", got)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "floe.yaml")
	if err := os.WriteFile(file, []byte("sharing:\n  max_shares: 7\n  max_recipients: 9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		want sharing.Limits
		err  string
	}{
		{"yaml", nil, sharing.Limits{Shares: 7, ObjectsPerShare: 1000, Recipients: 9, TokensPerRecipient: 5}, ""},
		{"env over yaml", map[string]string{"FLOE_SHARING_MAX_SHARES": "3", "FLOE_SHARING_MAX_OBJECTS_PER_SHARE": "4",
			"FLOE_SHARING_MAX_TOKENS_PER_RECIPIENT": "2"}, sharing.Limits{Shares: 3, ObjectsPerShare: 4, Recipients: 9, TokensPerRecipient: 2}, ""},
		{"not a number", map[string]string{"FLOE_SHARING_MAX_RECIPIENTS": "many"}, sharing.Limits{}, "FLOE_SHARING_MAX_RECIPIENTS"},
		{"zero", map[string]string{"FLOE_SHARING_MAX_SHARES": "0"}, sharing.Limits{}, "sharing.max_shares 0: must be between 1 and"},
		{"one token cannot rotate", map[string]string{"FLOE_SHARING_MAX_TOKENS_PER_RECIPIENT": "1"}, sharing.Limits{}, "must be at least 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.DataDir = dir
			if err := cfg.LoadFile(file); err != nil {
				t.Fatal(err)
			}
			err := cfg.LoadEnv(func(k string) string { return c.env[k] })
			if err == nil {
				err = cfg.Finish()
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Sharing.Limits(); got != c.want {
				t.Errorf("limits %+v, want %+v", got, c.want)
			}
		})
	}
}
