package remote

import (
	"testing"
	"unicode/utf8"
)

// FuzzRemoteMessage: whatever a remote sends, the message kept is valid
// UTF-8, free of control characters and at most maxMessage characters
// (plus the ellipsis).
func FuzzRemoteMessage(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"Table does not exist","type":"NoSuchTableException","code":404}}`))
	f.Add([]byte(`{"error":"invalid_client","error_description":"bad\nclient"}`))
	f.Add([]byte("<html>\xff</html>"))
	f.Fuzz(func(t *testing.T, body []byte) {
		m := remoteMessage(body)
		if !utf8.ValidString(m) || utf8.RuneCountInString(m) > maxMessage+1 {
			t.Fatalf("message %q", m)
		}
		for _, r := range m {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("control character in %q", m)
			}
		}
	})
}
