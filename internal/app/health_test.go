package app_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/testkit"
)

// TestHealth: /healthz and /readyz answer without authentication on the
// catalog and S3 listeners; /readyz fails (503, naming the check, not why)
// when the warehouse takes no write, and recovers.
func TestHealth(t *testing.T) {
	f := testkit.Start(t)
	get := func(base, path string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	for _, base := range []string{f.URL, f.App.S3URL()} {
		if st, out := get(base, "/healthz"); st != 200 || out["status"] != "up" {
			t.Fatalf("%s/healthz: %d %v", base, st, out)
		}
		st, out := get(base, "/readyz")
		checks, _ := out["checks"].(map[string]any)
		if st != 200 || out["status"] != "ready" || checks["store"] != "ok" || checks["warehouse"] != "ok" || checks["keys"] != "ok" {
			t.Fatalf("%s/readyz: %d %v", base, st, out)
		}
	}
	// A warehouse that takes no write: not ready.
	whDir := filepath.Join(f.Dir, "warehouse")
	probeDir := filepath.Join(whDir, "_floe_readyz")
	if err := os.MkdirAll(probeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(probeDir, 0o500); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// root writes anywhere: make the probe's directory a file instead.
		_ = os.Chmod(probeDir, 0o755)
		if err := os.RemoveAll(probeDir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(probeDir, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1100 * time.Millisecond) // past the cached result
	st, out := get(f.URL, "/readyz")
	checks, _ := out["checks"].(map[string]any)
	if st != http.StatusServiceUnavailable || out["status"] != "not ready" || checks["warehouse"] != "failed" || checks["store"] != "ok" {
		t.Fatalf("readyz with an unwritable warehouse: %d %v", st, out)
	}
	if len(out) != 2 {
		t.Fatalf("readyz says more than the checks: %v", out)
	}
	_ = os.Chmod(probeDir, 0o755)
	if err := os.RemoveAll(probeDir); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if st, out := get(f.URL, "/readyz"); st != 200 {
		t.Fatalf("readyz after the warehouse recovered: %d %v", st, out)
	}
	// Other methods and paths are the catalog's as before.
	if r := f.Do(t, "GET", "/v1/config", nil); r.Status != 200 {
		t.Fatalf("config: %d", r.Status)
	}
}
