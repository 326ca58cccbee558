package awskms_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/floe-lake/floe/objstore/sse"
	"github.com/floe-lake/floe/objstore/sse/awskms"
)

// fakeKMS "encrypts" by prefixing the purpose, and counts Decrypt calls.
type fakeKMS struct{ decrypts int }

func (f *fakeKMS) Encrypt(_ context.Context, in *kms.EncryptInput, _ ...func(*kms.Options)) (*kms.EncryptOutput, error) {
	return &kms.EncryptOutput{CiphertextBlob: append([]byte(in.EncryptionContext["floe"]+":"), in.Plaintext...)}, nil
}

func (f *fakeKMS) Decrypt(_ context.Context, in *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	f.decrypts++
	p := []byte(in.EncryptionContext["floe"] + ":")
	if !bytes.HasPrefix(in.CiphertextBlob, p) {
		return nil, &types.InvalidCiphertextException{Message: new(string)}
	}
	return &kms.DecryptOutput{Plaintext: bytes.Clone(in.CiphertextBlob[len(p):])}, nil
}

// TestCacheBound unwraps more distinct keys than the cache holds: it stays
// at its bound, and a cached key is served without calling KMS.
func TestCacheBound(t *testing.T) {
	ctx := context.Background()
	api := &fakeKMS{}
	w, err := awskms.New(api, awskms.Options{KeyID: "alias/floe", Purpose: "p", CacheEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	var wrapped [][]byte
	for i := range 3 {
		id, b, err := w.Wrap(ctx, bytes.Repeat([]byte{byte(i)}, 32))
		if err != nil || id != "alias/floe" {
			t.Fatalf("Wrap = %q, %v", id, err)
		}
		wrapped = append(wrapped, b)
	}
	for _, b := range wrapped {
		if _, err := w.Unwrap(ctx, "alias/floe", b); err != nil {
			t.Fatal(err)
		}
	}
	if w.CacheLen() != 2 || api.decrypts != 3 {
		t.Fatalf("cache %d entries after %d decrypts, want 2 and 3", w.CacheLen(), api.decrypts)
	}
	dek, err := w.Unwrap(ctx, "alias/floe", wrapped[2])
	if err != nil || !bytes.Equal(dek, bytes.Repeat([]byte{2}, 32)) || api.decrypts != 3 {
		t.Fatalf("cached unwrap = %x, %v after %d decrypts", dek, err, api.decrypts)
	}
	// Another purpose does not open it (encryption context), and maps to ErrCorrupt.
	other, _ := awskms.New(api, awskms.Options{KeyID: "alias/floe", Purpose: "q"})
	if _, err := other.Unwrap(ctx, "alias/floe", wrapped[0]); !errors.Is(err, sse.ErrCorrupt) {
		t.Errorf("unwrap under another purpose: %v, want ErrCorrupt", err)
	}
}
