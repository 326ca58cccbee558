package oauth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseForm(t *testing.T) {
	tests := []struct {
		name, ct, body string
		wantCode       string
	}{
		{"ok", "application/x-www-form-urlencoded", "grant_type=client_credentials&scope=catalog", ""},
		{"charset", "application/x-www-form-urlencoded; charset=utf-8", "grant_type=x", ""},
		{"json", "application/json", `{"grant_type":"x"}`, "invalid_request"},
		{"missing type", "", "grant_type=x", "invalid_request"},
		{"repeated", "application/x-www-form-urlencoded", "grant_type=a&grant_type=b", "invalid_request"},
		{"bad escape", "application/x-www-form-urlencoded", "grant_type=%zz", "invalid_request"},
		{"too large", "application/x-www-form-urlencoded", "a=" + strings.Repeat("x", MaxFormBytes+1), "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/oauth/tokens", strings.NewReader(tt.body))
			if tt.ct != "" {
				r.Header.Set("Content-Type", tt.ct)
			}
			_, err := ParseForm(r)
			switch {
			case tt.wantCode == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.wantCode != "":
				oe, ok := err.(*Error)
				if !ok || oe.Code != tt.wantCode {
					t.Fatalf("error %v, want %s", err, tt.wantCode)
				}
			}
		})
	}
}

// FuzzParseForm: any body yields a form or an invalid_request error, never a panic.
func FuzzParseForm(f *testing.F) {
	f.Add("grant_type=client_credentials&client_id=a&client_secret=b")
	f.Add("subject_token=a.b.c&subject_token_type=urn%3Aietf")
	f.Add("%")
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPost, "/v1/oauth/tokens", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		form, err := ParseForm(r)
		if err != nil {
			if oe, ok := err.(*Error); !ok || oe.Code != "invalid_request" || oe.status != 400 {
				t.Fatalf("unexpected error %#v", err)
			}
			return
		}
		for k := range form {
			if k == "" && body == "" {
				t.Fatal("empty key from empty body")
			}
		}
	})
}
