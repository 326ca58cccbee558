package check

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// FuzzLoadAnswer feeds untrusted LoadTableResult and token bodies to the
// parsers the checks use: none may panic, and credentials found always
// have a key id and a secret.
func FuzzLoadAnswer(f *testing.F) {
	f.Add([]byte(`{"metadata-location":"s3://b/t/m.json","metadata":{"format-version":2,"location":"s3://b/t"},"config":{"s3.access-key-id":"a","s3.secret-access-key":"s","s3.session-token-expires-at-ms":"1"}}`), []byte(`"3600"`))
	f.Add([]byte(`{"storage-credentials":[{"prefix":"","config":{"s3.access-key-id":"a","s3.secret-access-key":"s","expiration-time":"2026-01-01T00:00:00Z"}}]}`), []byte(`1e400`))
	f.Fuzz(func(t *testing.T, body, exp []byte) {
		tl := &tableLoad{}
		if json.Unmarshal(body, &tl.result) == nil {
			_ = json.Unmarshal(tl.result.Metadata, &tl.metadata)
		}
		if v, ok := credentialsOf(tl); ok && (v.keyID == "" || v.secret == "") {
			t.Fatalf("credentials without key: %+v", v)
		}
		_ = tl.metadata.currentSummary()
		if d := expiresIn(exp); d < 0 || d > 10*365*24*time.Hour {
			t.Fatalf("expires_in %s", d)
		}
		_, _, _ = splitS3(tl.result.MetadataLocation)
		_ = answer{status: 400, body: body}.describe()
	})
}

// TestDocsListEveryHint: docs/operations.md's troubleshooting table holds
// every hint, word for word.
func TestDocsListEveryHint(t *testing.T) {
	b, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for id, fix := range Hints {
		if !strings.Contains(string(b), "| `"+id+"` | "+fix+" |") {
			t.Errorf("docs/operations.md lacks the row of %s", id)
		}
	}
}
