package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestSTSRevokePolicyCmd(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC) }
	tests := []struct {
		args    []string
		want    []string
		wantErr string
	}{
		{[]string{"--before", "now"}, []string{`"FloeRevokeOlderSessions"`, `"aws:TokenIssueTime":["2026-12-03T15:00:00Z"]`}, ""},
		{[]string{"--principal", "bob", "--principal", "ann=2026-12-01T00:00:00Z", "--token", "jti-9"},
			[]string{`"aws:PrincipalTag/floe-principal":["ann"]`, `"2026-12-01T00:00:00Z"`, `"aws:PrincipalTag/floe-principal":["bob"]`,
				`"aws:PrincipalTag/floe-token-id":["jti-9"]`}, ""},
		{nil, nil, "name sessions to revoke"},
		{[]string{"--before", "yesterday"}, nil, "want now or RFC 3339"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			cmd := stsRevokeCmd(&out, now)
			cmd.SetArgs(tt.args)
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output %s lacks %s", out.String(), w)
				}
			}
		})
	}
}
