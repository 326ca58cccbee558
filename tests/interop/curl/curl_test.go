// Package curl runs docs/authentication.md's three-step flow (openssl and
// curl against a real floe binary) from a Go test.
package curl

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestThreeStepScript builds floe (or uses $FLOE_BIN) and runs three_step.sh.
func TestThreeStepScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the floe binary")
	}
	for _, tool := range []string{"bash", "curl", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("*** three_step.sh SKIPPED: %s is not installed (apt-get install %s) ***", tool, tool)
			fmt.Fprintln(os.Stderr, msg)
			t.Skip(msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := os.Getenv("FLOE_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "floe")
		out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/floe-lake/floe/cmd/floe").CombinedOutput()
		if err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.CommandContext(ctx, "bash", "three_step.sh")
	cmd.Env = append(os.Environ(), "FLOE_BIN="+bin, "FLOE_PORT="+strconv.Itoa(port))
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("three_step.sh: %v", err)
	}
}
