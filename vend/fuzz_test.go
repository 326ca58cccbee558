package vend_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/vend"
)

// FuzzResolve resolves arbitrary access key ids and tokens: Resolve never
// panics, fails with one of its sentinel errors, and succeeds only for the
// one credential minted.
func FuzzResolve(f *testing.F) {
	clock := fakeclock.New(t0)
	ks := &memKeys{}
	e, err := vend.NewEmbedded(f.Context(), ks, vend.EmbeddedOptions{Now: clock.Now})
	if err != nil {
		f.Fatal(err)
	}
	c, _, err := e.Mint(f.Context(), session(), 0)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(c.AccessKeyID, c.SessionToken)
	for i, v := range tokenVariants(&testing.T{}, c.SessionToken) {
		if i%37 == 0 {
			f.Add(c.AccessKeyID, v)
		}
	}
	f.Add("FLOEAAAAAAAAAAAAAAAA", "FV1.")
	f.Add("FLOEAAAAAAAAAAAAAAAA", "FV1.AQ")
	f.Add("FLOEAAAAAAAAAAAAAAAA", encodeToken(append([]byte{1, 'k'}, make([]byte, 28)...)))
	f.Add("FLOEAAAAAAAAAAAAAAAA", encodeToken(append([]byte{64}, make([]byte, 100)...)))
	f.Add("AKIAIOSFODNN7EXAMPLE", "")
	f.Fuzz(func(t *testing.T, akid, token string) {
		s, secret, err := e.Resolve(t.Context(), akid, token)
		if akid == c.AccessKeyID && token == c.SessionToken {
			if err != nil || secret != c.SecretAccessKey {
				t.Fatalf("the minted credential does not resolve: %v", err)
			}
			return
		}
		if err == nil {
			t.Fatalf("Resolve(%q, %q) succeeded: %+v", akid, token, s)
		}
		if !errors.Is(err, vend.ErrInvalidToken) && !errors.Is(err, vend.ErrUnknownAccessKey) {
			t.Fatalf("Resolve(%q, %q): %v, want a sentinel error", akid, token, err)
		}
		if secret != "" || s.Grants != nil {
			t.Fatalf("failed Resolve returned %+v, %q", s, secret)
		}
	})
}

// FuzzSessionPolicy builds policies for arbitrary grants: the result is
// either an Invalid error or valid JSON within MaxPolicyLen whose resources
// have no wildcard but the final one.
func FuzzSessionPolicy(f *testing.F) {
	f.Add("lake", "crm/accounts-0a1b/", uint8(1), "other", "a*b?$/", uint8(2))
	f.Add("", "", uint8(0), "b", "../", uint8(1))
	f.Add("lake", "x\"y\\z\u2028/", uint8(2), "lake", "x/", uint8(1))
	f.Fuzz(func(t *testing.T, b1, p1 string, a1 uint8, b2, p2 string, a2 uint8) {
		grants := []vend.Grant{{Bucket: b1, Prefix: p1, Access: vend.Access(a1)}, {Bucket: b2, Prefix: p2, Access: vend.Access(a2)}}
		p, err := vend.SessionPolicy(grants)
		if err != nil {
			if floe.KindOf(err) != floe.Invalid {
				t.Fatalf("SessionPolicy: %v, want Invalid", err)
			}
			return
		}
		if len([]rune(p)) > vend.MaxPolicyLen {
			t.Fatalf("policy of %d characters", len([]rune(p)))
		}
		var doc struct {
			Statement []struct {
				Action    []string
				Resource  []string
				Condition map[string]map[string][]string
			}
		}
		if err := json.Unmarshal([]byte(p), &doc); err != nil {
			t.Fatalf("policy is not JSON: %v\n%s", err, p)
		}
		for _, st := range doc.Statement {
			var patterns []string
			patterns = append(patterns, st.Resource...)
			for _, cond := range st.Condition {
				for _, vs := range cond {
					patterns = append(patterns, vs...)
				}
			}
			for _, r := range patterns {
				r = strings.TrimSuffix(r, "*")
				r = strings.NewReplacer("${*}", "", "${?}", "", "${$}", "").Replace(r)
				if strings.ContainsAny(r, "*?$") {
					t.Fatalf("unescaped wildcard or variable in %q of\n%s", r, p)
				}
			}
		}
	})
}
