package app

import (
	"strconv"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/federation/remote"
)

// TestStorageProps: the SQL endpoint reads a foreign table's files only
// with what its remote vended (never Floe's own storage identity), with
// the storage credential of the longest matching prefix, only storage keys
// it knows (no proxy, no signer), and never from a link-local endpoint.
func TestStorageProps(t *testing.T) {
	const loc = "s3://lake/crm/accounts"
	creds := func(ak string) map[string]string {
		return map[string]string{"s3.access-key-id": ak, "s3.secret-access-key": "s", "s3.session-token": "tok"}
	}
	id := catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"}
	tests := []struct {
		name     string
		location string
		t        remote.LoadTableResult
		want     map[string]string // keys that must have these values
		absent   []string
		kind     floe.Kind // of the error, when one is expected
	}{
		{name: "config keys", location: loc,
			t: remote.LoadTableResult{Config: map[string]string{"s3.access-key-id": "AK", "s3.secret-access-key": "s",
				"s3.endpoint": "http://127.0.0.1:9000", "s3.path-style-access": "true", "s3.proxy-uri": "http://evil:3128",
				"s3.signer.uri": "http://evil", "client.credentials-provider": "x"}},
			want:   map[string]string{"s3.access-key-id": "AK", "s3.endpoint": "http://127.0.0.1:9000", "s3.force-virtual-addressing": "false"},
			absent: []string{"s3.proxy-uri", "s3.signer.uri", "client.credentials-provider", "s3.path-style-access"}},
		{name: "longest prefix wins", location: loc,
			t: remote.LoadTableResult{StorageCredentials: []remote.StorageCredential{
				{Prefix: "s3://lake/", Config: creds("WIDE")},
				{Prefix: "s3://lake/crm/accounts", Config: creds("NARROW")},
				{Prefix: "s3://other/", Config: creds("OTHER")}}},
			want: map[string]string{"s3.access-key-id": "NARROW", "s3.session-token": "tok"}},
		{name: "no credential for the location", location: loc,
			t:    remote.LoadTableResult{StorageCredentials: []remote.StorageCredential{{Prefix: "s3://other/", Config: creds("OTHER")}}},
			kind: floe.Forbidden},
		{name: "nothing vended", location: loc, t: remote.LoadTableResult{Config: map[string]string{"s3.region": "eu-west-1"}}, kind: floe.Forbidden},
		{name: "metadata service endpoint", location: loc,
			t: remote.LoadTableResult{Config: map[string]string{"s3.access-key-id": "AK", "s3.secret-access-key": "s",
				"s3.endpoint": "http://169.254.169.254/latest"}}, kind: floe.Forbidden},
		{name: "file endpoint", location: loc,
			t: remote.LoadTableResult{Config: map[string]string{"s3.access-key-id": "AK", "s3.secret-access-key": "s",
				"s3.endpoint": "file:///etc"}}, kind: floe.Forbidden},
		{name: "not on S3", location: "gs://lake/crm/accounts", t: remote.LoadTableResult{Config: creds("AK")}, kind: floe.Unsupported},
		{name: "a local path", location: "/var/lib/floe/warehouse/crm", t: remote.LoadTableResult{Config: creds("AK")}, kind: floe.Unsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := storageProps("acme", id, tt.location, &tt.t)
			if tt.kind != 0 {
				if err == nil || floe.KindOf(err) != tt.kind || !strings.Contains(err.Error(), "acme") {
					t.Fatalf("err %v (kind %v), want kind %v naming the catalog", err, floe.KindOf(err), tt.kind)
				}
				if strings.Contains(err.Error(), "tok") {
					t.Fatalf("the error shows a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			for _, k := range tt.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s kept", k)
				}
			}
		})
	}
}

// TestForeignIOKey: storage clients are kept per catalog, bucket and
// credential, under a digest (no secret in the key).
func TestForeignIOKey(t *testing.T) {
	p := map[string]string{"s3.access-key-id": "AK", "s3.secret-access-key": "very-secret"}
	a := ioKey("acme", "s3://lake/a", p)
	if a != ioKey("acme", "s3://lake/b", p) {
		t.Fatal("two tables of one bucket and credential do not share a client")
	}
	if a == ioKey("other", "s3://lake/a", p) || a == ioKey("acme", "s3://lake2/a", p) ||
		a == ioKey("acme", "s3://lake/a", map[string]string{"s3.access-key-id": "AK", "s3.secret-access-key": "rotated"}) {
		t.Fatal("clients shared across catalogs, buckets or credentials")
	}
	if strings.Contains(a, "very-secret") {
		t.Fatal("the key holds the secret")
	}
}

// TestForeignIOsBounded: the storage clients kept for foreign tables stay
// within maxForeignIOs, the least recently used out, and one is reused for
// the same catalog, bucket and credential.
func TestForeignIOsBounded(t *testing.T) {
	f := newSQLForeign(nil)
	dir := t.TempDir()
	first, err := f.storage(t.Context(), "acme", "file://"+dir+"/b0", map[string]string{"k": "0"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.storage(t.Context(), "acme", "file://"+dir+"/b0", map[string]string{"k": "0"})
	if err != nil || again != first {
		t.Fatalf("the same catalog, bucket and credential made a new client: %v", err)
	}
	for i := 1; i <= maxForeignIOs+10; i++ {
		if _, err := f.storage(t.Context(), "acme", "file://"+dir, map[string]string{"k": strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.ios.Len(); n != maxForeignIOs {
		t.Fatalf("%d storage clients kept, want the bound %d", n, maxForeignIOs)
	}
	if f.ios.Contains(ioKey("acme", "file://"+dir+"/b0", map[string]string{"k": "0"})) {
		t.Fatal("the least recently used client was not dropped")
	}
}
