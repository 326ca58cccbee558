package app

import (
	"context"
	"errors"
	"fmt"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/federation"
	"github.com/floe-lake/floe/internal/keywrap"
	"github.com/floe-lake/floe/objstore/sse"
	"github.com/floe-lake/floe/objstore/sse/awskms"
	"github.com/floe-lake/floe/store/sqlstore"
	"github.com/floe-lake/floe/vend"
)

// KMS encryption-context purposes: the store's secrets and the embedded
// store's object data keys are wrapped under different contexts, so that
// one cannot be unwrapped as the other.
const (
	kmsPurposeSecrets = "store-secrets-v1"
	kmsPurposeObjects = "sse-v1"
)

// openKeys opens the key wrappers (the store's secrets; the objects' data
// keys) and seals or re-wraps every secret of the store that is plaintext
// (a store written before keys were wrapped) or wrapped under a key other
// than the current one. It runs before anything reads a secret.
func (a *App) openKeys(ctx context.Context) error {
	cfg := a.cfg
	switch cfg.KeyWrapper {
	case "kms":
		ac, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.KMSRegion))
		if err != nil {
			return fmt.Errorf("aws configuration for KMS: %w", err)
		}
		client := awskms.NewClient(ac, cfg.KMSRegion, cfg.KMSEndpoint)
		secrets, err := awskms.New(client, awskms.Options{KeyID: cfg.KMSKeyID, Purpose: kmsPurposeSecrets})
		if err != nil {
			return err
		}
		objects, err := awskms.New(client, awskms.Options{KeyID: cfg.KMSKeyID, Purpose: kmsPurposeObjects})
		if err != nil {
			return err
		}
		a.sealer, a.objectWrapper = keywrap.New(secrets), objects
	default:
		kr, err := loadKeyring(cfg)
		if err != nil {
			return err
		}
		a.sealer, a.objectWrapper = keywrap.New(kr), kr
	}
	res, err := a.RewrapSecrets(ctx)
	if err != nil {
		if errors.Is(err, sse.ErrUnknownKey) {
			return fmt.Errorf("%w; this node does not hold the key the store's secrets are wrapped with: configure the same key file (or KMS key) as the nodes that wrote them", err)
		}
		return err
	}
	if res.Sealed > 0 || res.Rewrapped > 0 {
		a.log.InfoContext(ctx, "keys at rest: wrapped the store's secrets under the current key",
			"key", a.sealer.Wrapper().CurrentKeyID(), "sealed_plaintext", res.Sealed, "rewrapped", res.Rewrapped)
	}
	if res.Sealed > 0 {
		// Plaintext keys were just sealed: drop the old row versions the
		// database keeps, so its files hold no plaintext key.
		if err := a.store.ScrubKeyTables(ctx); err != nil {
			return err
		}
		a.log.WarnContext(ctx, "keys at rest: the store held plaintext keys; backups taken before today still do. Rotate them: floe signing-key rotate (vend keys rotate weekly)")
	}
	return nil
}

// SecretsRewrapResult counts what RewrapSecrets did.
type SecretsRewrapResult = keywrap.Result

// RewrapSecrets seals every plaintext secret of the metadata store and
// re-wraps every sealed one under the key wrapper's current key (it runs on
// every start; `floe keys rewrap` runs it on demand). Each row is replaced
// with a compare and swap, so nodes keep serving meanwhile: they hold
// their keys unwrapped in memory and unwrap only keys new to them.
func (a *App) RewrapSecrets(ctx context.Context) (SecretsRewrapResult, error) {
	var total keywrap.Result
	for _, t := range []struct {
		purpose string
		table   keywrap.Table
	}{
		{auth.SealPurpose, signingKeyTable{a.store}},
		{vend.SealPurpose, vendKeyTable{a.store}},
		{federation.SealPurpose, foreignSecretTable{a.store}},
		{federation.WriteSealPurpose, foreignWriteSecretTable{a.store}},
	} {
		res, err := keywrap.RewrapAll(ctx, a.sealer, t.purpose, t.table)
		total.Scanned += res.Scanned
		total.Sealed += res.Sealed
		total.Rewrapped += res.Rewrapped
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// KeyWrapperID names the key the store's secrets are wrapped with now.
func (a *App) KeyWrapperID() string { return a.sealer.Wrapper().CurrentKeyID() }

// signingKeyTable presents the token-signing keys to keywrap.RewrapAll.
type signingKeyTable struct{ s *sqlstore.Store }

func (t signingKeyTable) Records(ctx context.Context) ([]keywrap.Record, error) {
	keys, err := t.s.SigningKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]keywrap.Record, len(keys))
	for i, k := range keys {
		out[i] = keywrap.Record{ID: k.KID, Blob: k.PrivatePEM}
	}
	return out, nil
}

func (t signingKeyTable) Replace(ctx context.Context, id string, old, new []byte) (bool, error) {
	return t.s.ReplaceSigningKey(ctx, id, old, new)
}

// vendKeyTable presents the credential-sealing keys to keywrap.RewrapAll.
type vendKeyTable struct{ s *sqlstore.Store }

func (t vendKeyTable) Records(ctx context.Context) ([]keywrap.Record, error) {
	keys, err := t.s.VendKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]keywrap.Record, len(keys))
	for i, k := range keys {
		out[i] = keywrap.Record{ID: k.ID, Blob: k.Secret}
	}
	return out, nil
}

func (t vendKeyTable) Replace(ctx context.Context, id string, old, new []byte) (bool, error) {
	return t.s.ReplaceVendKey(ctx, id, old, new)
}
