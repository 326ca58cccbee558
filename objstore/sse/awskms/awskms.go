// Package awskms is an [sse.KeyWrapper] backed by AWS KMS: data keys are
// wrapped with kms:Encrypt under a customer-managed key and unwrapped with
// kms:Decrypt, so the key material that protects Floe's data files and the
// secrets in its metadata store never leaves KMS.
//
// Each Wrapper carries an encryption context {"floe": purpose}; KMS binds
// it into the ciphertext and refuses to decrypt under another, so a data key
// wrapped for one purpose (say, the objects of the embedded store) cannot be
// unwrapped as another (the secrets of the metadata store), and CloudTrail
// names the purpose of every call.
//
// Unwrapped data keys are cached in memory (bounded in entries and in time)
// so that reading an object, or reloading keys, does not call KMS each time.
package awskms

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/hashicorp/golang-lru/v2/expirable"

	"github.com/floe-lake/floe/objstore/sse"
)

// API is the part of the KMS client a Wrapper calls; *kms.Client has it.
type API interface {
	// Encrypt is kms:Encrypt.
	Encrypt(ctx context.Context, in *kms.EncryptInput, opts ...func(*kms.Options)) (*kms.EncryptOutput, error)
	// Decrypt is kms:Decrypt.
	Decrypt(ctx context.Context, in *kms.DecryptInput, opts ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// Defaults of Options.
const (
	DefaultCacheEntries = 4096
	DefaultCacheTTL     = 5 * time.Minute
)

// Options configures a Wrapper.
type Options struct {
	// KeyID is the customer-managed KMS key new data keys are wrapped with:
	// a key id, key ARN, alias name ("alias/floe") or alias ARN. It is the
	// wrapper's CurrentKeyID and is stored with every wrapped key; at most
	// 255 bytes.
	KeyID string
	// Purpose is the value of the "floe" encryption context key.
	Purpose string
	// CacheEntries bounds the cache of unwrapped data keys (default
	// DefaultCacheEntries; negative disables the cache).
	CacheEntries int
	// CacheTTL is how long an unwrapped data key is cached (default
	// DefaultCacheTTL).
	CacheTTL time.Duration
}

// Wrapper wraps data keys with AWS KMS. It is safe for concurrent use.
type Wrapper struct {
	api     API
	keyID   string
	context map[string]string
	cache   *expirable.LRU[[sha256.Size]byte, []byte] // nil: no cache
}

var _ sse.KeyWrapper = (*Wrapper)(nil)

// New returns a Wrapper that calls api.
func New(api API, o Options) (*Wrapper, error) {
	if o.KeyID == "" || len(o.KeyID) > 255 {
		return nil, errors.New("awskms: the KMS key id must have 1 to 255 bytes")
	}
	if o.Purpose == "" {
		return nil, errors.New("awskms: a purpose is required")
	}
	w := &Wrapper{api: api, keyID: o.KeyID, context: map[string]string{"floe": o.Purpose}}
	if o.CacheEntries == 0 {
		o.CacheEntries = DefaultCacheEntries
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	if o.CacheEntries > 0 {
		w.cache = expirable.NewLRU[[sha256.Size]byte, []byte](o.CacheEntries, func(_ [sha256.Size]byte, dek []byte) { clear(dek) }, o.CacheTTL)
	}
	return w, nil
}

// CurrentKeyID returns the configured KMS key id.
func (w *Wrapper) CurrentKeyID() string { return w.keyID }

// String names the key and purpose, never key material.
func (w *Wrapper) String() string {
	return fmt.Sprintf("awskms.Wrapper{key: %s, purpose: %s}", w.keyID, w.context["floe"])
}

// Wrap encrypts dek with kms:Encrypt under the configured key.
func (w *Wrapper) Wrap(ctx context.Context, dek []byte) (string, []byte, error) {
	if len(dek) == 0 {
		return "", nil, errors.New("awskms: wrap: empty data key")
	}
	out, err := w.api.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(w.keyID), Plaintext: dek, EncryptionContext: w.context})
	if err != nil {
		return "", nil, fmt.Errorf("awskms: encrypt under %s: %w", w.keyID, mapErr(err))
	}
	return w.keyID, out.CiphertextBlob, nil
}

// Unwrap decrypts a data key wrapped under KMS key keyID. KMS errors map to
// sse.ErrUnknownKey (no such key, a key that is not the one the blob was
// wrapped under, a disabled key) and sse.ErrCorrupt (an invalid ciphertext,
// or one wrapped for another purpose); others (network, throttling) pass
// through.
func (w *Wrapper) Unwrap(ctx context.Context, keyID string, wrapped []byte) ([]byte, error) {
	var ck [sha256.Size]byte
	if w.cache != nil {
		h := sha256.New()
		h.Write([]byte(keyID))
		h.Write([]byte{0})
		h.Write(wrapped)
		h.Sum(ck[:0])
		if dek, ok := w.cache.Get(ck); ok {
			return append([]byte(nil), dek...), nil
		}
	}
	out, err := w.api.Decrypt(ctx, &kms.DecryptInput{KeyId: aws.String(keyID), CiphertextBlob: wrapped, EncryptionContext: w.context})
	if err != nil {
		return nil, fmt.Errorf("awskms: decrypt under %s: %w", keyID, mapErr(err))
	}
	if w.cache != nil {
		w.cache.Add(ck, append([]byte(nil), out.Plaintext...))
	}
	return out.Plaintext, nil
}

// CacheLen returns how many unwrapped data keys are cached.
func (w *Wrapper) CacheLen() int {
	if w.cache == nil {
		return 0
	}
	return w.cache.Len()
}

// mapErr adds the sse sentinel a KMS error stands for.
func mapErr(err error) error {
	var (
		nf  *types.NotFoundException
		ik  *types.IncorrectKeyException
		dis *types.DisabledException
		st  *types.KMSInvalidStateException
		ic  *types.InvalidCiphertextException
	)
	switch {
	case errors.As(err, &nf), errors.As(err, &ik), errors.As(err, &dis), errors.As(err, &st):
		return fmt.Errorf("%w: %w", sse.ErrUnknownKey, err)
	case errors.As(err, &ic):
		return fmt.Errorf("%w: %w", sse.ErrCorrupt, err)
	}
	return err
}

// NewClient returns a KMS client for region, at endpoint when it is not
// empty (an emulator, or a VPC endpoint), with credentials from the
// default AWS chain of cfg.
func NewClient(cfg aws.Config, region, endpoint string) *kms.Client {
	return kms.NewFromConfig(cfg, func(o *kms.Options) {
		if region != "" {
			o.Region = region
		}
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}
