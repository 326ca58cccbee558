package vend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/floe-lake/floe"
)

// withNetworkDeny returns policy (a session policy of sessionPolicy) with
// a statement that denies every S3 action to a request whose source
// address (aws:SourceIp) is outside cidrs, the principal's allowlist: the
// AWS way of carrying it into STS credentials, which Floe's S3 endpoint
// never sees. A request without aws:SourceIp (through a VPC endpoint) is
// denied too: NotIpAddress matches a missing key. With no cidrs, policy is
// returned unchanged.
func withNetworkDeny(policy string, cidrs []string) (string, error) {
	if len(cidrs) == 0 {
		return policy, nil
	}
	var doc policyDocument
	if err := json.Unmarshal([]byte(policy), &doc); err != nil {
		return "", fmt.Errorf("vend: decode session policy: %w", err)
	}
	doc.Statement = append(doc.Statement, policyStatement{Sid: "Network", Effect: "Deny", Action: []string{"s3:*"}, Resource: []string{"*"},
		Condition: map[string]map[string][]string{"NotIpAddress": {"aws:SourceIp": cidrs}}})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return "", fmt.Errorf("vend: encode session policy: %w", err)
	}
	out := strings.TrimSuffix(buf.String(), "\n")
	if n := len([]rune(out)); n > MaxPolicyLen {
		return "", floe.E(floe.Invalid, "credential", "the session policy of the credential's grants and the principal's network allowlist has %d characters, more than the %d STS allows", n, MaxPolicyLen)
	}
	return out, nil
}
