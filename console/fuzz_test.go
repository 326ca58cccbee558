package console

import (
	"path"
	"strings"
	"testing"
)

// FuzzProxyTarget: whatever path a browser sends, the proxy reaches only
// the management API and the REST catalog, never the OAuth endpoints, and
// never climbs out with "..".
func FuzzProxyTarget(f *testing.F) {
	for _, s := range []string{"/console/api/proxy/api/v1/whoami", "/console/api/proxy/v1/config", "/console/api/proxy/v1/oauth/tokens",
		"/console/api/proxy/v1/../oauth/tokens", "/console/api/proxy/api/v1/..", "/console/api/proxy//v1/oauth/revoke", "/console/api/proxy/metrics",
		"/console/api/proxy/", "/v1/config", "/console/api/proxy/v1/./oauth/tokens", "/console/api/proxy/v1//oauth/tokens"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		target, ok := proxyTarget(p)
		if !ok {
			if target != "" {
				t.Fatalf("%q: refused but target %q", p, target)
			}
			return
		}
		if !strings.HasPrefix(p, "/console/api/proxy/") || "/console/api/proxy"+target != p {
			t.Fatalf("%q: target %q is not the path's tail", p, target)
		}
		if !strings.HasPrefix(target, "/api/v1/") && !strings.HasPrefix(target, "/v1/") {
			t.Fatalf("%q: target %q outside the APIs", p, target)
		}
		if strings.HasPrefix(target, "/v1/oauth/") || path.Clean(target) != strings.TrimSuffix(target, "/") {
			t.Fatalf("%q: target %q reaches OAuth or climbs", p, target)
		}
	})
}
