package vend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts/types"
	"github.com/aws/smithy-go"

	"github.com/floe-lake/floe"
)

// Session tags the STS minter puts on every AssumeRole session (they need
// sts:TagSession in the role's trust policy). IAM sees them as
// aws:PrincipalTag/<key> on every request the credentials sign, so that a
// deny statement can name the sessions of one principal or token
// (RevokeSessionsPolicy).
const (
	TagPrincipal = "floe-principal"
	TagTokenID   = "floe-token-id"
	TagTable     = "floe-table"
)

// maxTagValue is the longest session tag value STS accepts.
const maxTagValue = 256

// sessionTags returns the session tags of s: its principal, token id and
// table, each present only when not empty.
func sessionTags(s Session) []types.Tag {
	var tags []types.Tag
	for _, kv := range [][2]string{{TagPrincipal, s.Principal}, {TagTokenID, s.TokenID}, {TagTable, s.Table}} {
		if kv[1] != "" {
			tags = append(tags, types.Tag{Key: aws.String(kv[0]), Value: aws.String(tagValue(kv[1]))})
		}
	}
	return tags
}

// tagValue returns v with the characters a session tag value may not hold
// replaced by "_", at most maxTagValue characters. Letters, digits, spaces
// and _.:/=+-@ are kept.
func tagValue(v string) string {
	v = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(" _.:/=+-@", r):
			return r
		}
		return '_'
	}, v)
	if len(v) > maxTagValue {
		v = v[:maxTagValue]
	}
	return v
}

// tagSessionDenied reports whether STS refused AssumeRole because the role
// does not trust the caller to tag sessions (no sts:TagSession).
func tagSessionDenied(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "AccessDenied" && strings.Contains(ae.ErrorMessage(), "TagSession")
}

// RevokeSessions names the STS sessions to revoke. Credentials AWS STS has
// issued cannot be recalled; a deny statement in the role's policy that
// matches them makes AWS refuse them instead.
type RevokeSessions struct {
	// Before revokes every session of the role issued before it (what the
	// IAM console's "Revoke active sessions" writes); zero: none.
	Before time.Time
	// Principals revokes, per principal name, its sessions issued before
	// the time (its disable or a revoked grant).
	Principals map[string]time.Time
	// TokenIDs revokes every session vended under these access tokens.
	TokenIDs []string
}

// RevokeSessionsPolicy returns the IAM policy (compact JSON) to put on the
// role STS credentials are vended from, as an inline policy, so that AWS
// refuses the sessions r names: deny statements keyed on aws:TokenIssueTime
// (all sessions issued before r.Before; the sessions of each principal,
// tagged floe-principal, issued before its time) and on the floe-token-id
// session tag. The per-principal and per-token statements only match
// sessions minted with session tags. It fails with floe.Invalid if r names
// nothing, or if the policy exceeds the 10,240 characters IAM allows in the
// inline policies of a role.
func RevokeSessionsPolicy(r RevokeSessions) (string, error) {
	type statement struct {
		Sid       string                         `json:"Sid"`
		Effect    string                         `json:"Effect"`
		Action    string                         `json:"Action"`
		Resource  string                         `json:"Resource"`
		Condition map[string]map[string][]string `json:"Condition"`
	}
	deny := func(sid string, cond map[string]map[string][]string) statement {
		return statement{Sid: sid, Effect: "Deny", Action: "*", Resource: "*", Condition: cond}
	}
	issued := func(t time.Time) map[string][]string {
		return map[string][]string{"aws:TokenIssueTime": {t.UTC().Truncate(time.Second).Format(time.RFC3339)}}
	}
	var st []statement
	if !r.Before.IsZero() {
		st = append(st, deny("FloeRevokeOlderSessions", map[string]map[string][]string{"DateLessThan": issued(r.Before)}))
	}
	names := make([]string, 0, len(r.Principals))
	for n := range r.Principals {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		st = append(st, deny(fmt.Sprintf("FloeRevokePrincipal%d", i), map[string]map[string][]string{
			"DateLessThan": issued(r.Principals[n]),
			"StringEquals": {"aws:PrincipalTag/" + TagPrincipal: {tagValue(n)}},
		}))
	}
	if len(r.TokenIDs) > 0 {
		ids := make([]string, len(r.TokenIDs))
		for i, id := range r.TokenIDs {
			ids[i] = tagValue(id)
		}
		slices.Sort(ids)
		st = append(st, deny("FloeRevokeTokens", map[string]map[string][]string{
			"StringEquals": {"aws:PrincipalTag/" + TagTokenID: slices.Compact(ids)},
		}))
	}
	if len(st) == 0 {
		return "", floe.E(floe.Invalid, "policy", "name sessions to revoke: a time, principals or token ids")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"Version": "2012-10-17", "Statement": st}); err != nil {
		return "", fmt.Errorf("vend: encode revocation policy: %w", err)
	}
	p := strings.TrimSuffix(buf.String(), "\n")
	if len(p) > 10240 {
		return "", floe.E(floe.Invalid, "policy", "the revocation policy has %d characters, more than the 10,240 IAM allows a role's inline policies", len(p))
	}
	return p, nil
}
