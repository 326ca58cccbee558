package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// BuildInfo is what `floe version` prints: the module version, the commit
// and time of the source it was built from (when built from a git checkout)
// and the Go toolchain.
type BuildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	CommitAt  string `json:"commit_time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// stampCommit and stampCommitTime are set at link time by the Makefile
// (-ldflags -X) when Go's own VCS stamping is off; read-only afterwards.
var (
	stampCommit     string
	stampCommitTime string
)

// ReadBuildInfo returns the running binary's BuildInfo.
func ReadBuildInfo() BuildInfo {
	b := BuildInfo{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	b.Commit, b.CommitAt = stampCommit, stampCommitTime
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := info.Main.Version; v != "" {
		b.Version = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.CommitAt = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

func versionCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "version", Short: "Print the version, commit and Go toolchain this binary was built from", Args: cobra.NoArgs}
	asJSON := cmd.Flags().Bool("json", false, "print JSON")
	cmd.RunE = func(*cobra.Command, []string) error {
		b := ReadBuildInfo()
		if *asJSON {
			return json.NewEncoder(stdout).Encode(b)
		}
		commit := b.Commit
		if commit == "" {
			commit = "unknown (not built from a git checkout)"
		} else if b.Modified {
			commit += " (with uncommitted changes)"
		}
		_, err := fmt.Fprintf(stdout, "floe %s\ncommit: %s\ncommitted: %s\ngo: %s %s\n", b.Version, commit, orDash(b.CommitAt), b.GoVersion, b.Platform)
		return err
	}
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
