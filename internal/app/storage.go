package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/awsspans"
	"github.com/floe-lake/floe/internal/netlimit"
	"github.com/floe-lake/floe/internal/obs"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/subset"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/objstore/s3api"
	"github.com/floe-lake/floe/objstore/s3io"
	"github.com/floe-lake/floe/objstore/sse"
	"github.com/floe-lake/floe/restcat"
	"github.com/floe-lake/floe/vend"
)

// openStorage opens the warehouse storage and the credential minter, and
// returns the FileIO the catalog writes metadata through.
func (a *App) openStorage(ctx context.Context) (catalog.FileIO, error) {
	cfg := a.cfg
	if cfg.Storage == "s3" {
		return a.openExternalS3(ctx)
	}
	var kw sse.KeyWrapper
	if cfg.Encryption {
		kw = a.objectWrapper
		a.keyring = kw
	}
	cold := cfg.ColdDir
	if cold == "off" {
		cold = ""
	}
	objs, err := bucket.New(bucket.Options{
		Buckets:    map[string]string{cfg.Warehouse: cfg.WarehouseDir},
		TempDir:    filepath.Join(cfg.DataDir, "staging"),
		Encryption: kw,
		Logger:     a.log,
		ColdDir:    cold,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded object store: %w", err)
	}
	a.objects = objs
	if cfg.S3Listen != "off" {
		em, err := vend.NewEmbedded(ctx, a.store, vend.EmbeddedOptions{Logger: a.log, Sealer: a.sealer, Epoch: a.revocations.Version})
		if err != nil {
			return nil, fmt.Errorf("credential vending: %w", err)
		}
		a.minter = em
		var resolver s3api.Resolver = em
		if cfg.InsecureNoAuth {
			resolver = nil
		}
		a.s3 = s3api.New(s3api.Options{Store: objs, Resolver: a.s3Resolver(resolver), Region: cfg.Region, Audit: a.auditObject, Logger: a.log,
			Revoked: a.revokedCredential, Listed: subset.NewKeys(lake.NewBucketFS(objs), 0)})
	}
	return objs.FileIO(), nil
}

// loadKeyring reads the warehouse keys, creating the default key file with a
// fresh key on first start.
func loadKeyring(cfg Config) (*sse.LocalKeyring, error) {
	if cfg.EncryptionKey != "" {
		kr, err := sse.ParseKeyring([]byte(cfg.EncryptionKey))
		if err != nil {
			return nil, fmt.Errorf("FLOE_ENCRYPTION_KEY: %w", err)
		}
		return kr, nil
	}
	path := cfg.EncryptionKeyFile
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && path == filepath.Join(cfg.DataDir, "keys", "warehouse.keys") {
		key, err := sse.GenerateKey()
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("encryption key directory: %w", err)
		}
		line := fmt.Sprintf("# Floe warehouse keys: \"<id> <base64 key>\" per line; the last is current.\nk%s %s\n",
			time.Now().UTC().Format("20060102T150405"), key)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("create encryption key file: %w", err)
		}
		if _, err := f.WriteString(line); err != nil {
			f.Close()
			return nil, fmt.Errorf("write encryption key file: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("write encryption key file: %w", err)
		}
	}
	kr, err := sse.LoadKeyring(path)
	if err != nil {
		return nil, fmt.Errorf("encryption key file: %w", err)
	}
	return kr, nil
}

// openExternalS3 sets up a warehouse on AWS S3 or an S3-compatible store.
func (a *App) openExternalS3(ctx context.Context) (catalog.FileIO, error) {
	cfg := a.cfg
	ac, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.Region))
	if err != nil {
		return nil, fmt.Errorf("aws configuration: %w", err)
	}
	ac.APIOptions = append(ac.APIOptions, awsspans.APIOption) // S3 calls traced under their request
	client := s3.NewFromConfig(ac, func(o *s3.Options) {
		if cfg.S3.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.S3.Endpoint)
		}
		o.UsePathStyle = cfg.S3.PathStyle
	})
	sts, err := vend.NewSTS(ctx, vend.STSOptions{RoleARN: cfg.S3.RoleARN, ExternalID: cfg.S3.ExternalID,
		Region: cfg.Region, Endpoint: cfg.S3.STSEndpoint, Credentials: ac.Credentials, Logger: a.log})
	if err != nil {
		return nil, fmt.Errorf("sts: %w", err)
	}
	a.minter = sts
	return s3io.New(client), nil
}

// vending configures what restcat hands out with tables.
func (a *App) vending() *restcat.Vending {
	if a.minter == nil {
		return nil
	}
	v := &restcat.Vending{Minter: a.minter, Region: a.cfg.Region, TTL: a.cfg.CredentialTTL, Audit: a.auditVend,
		Revoked: a.revokedCredential, Observe: a.metrics.CredentialsVended}
	if a.cfg.Storage == "s3" {
		v.Endpoint, v.PathStyle = a.cfg.S3.Endpoint, a.cfg.S3.PathStyle
	} else {
		v.PathStyle = true
		v.Endpoint = a.cfg.S3PublicURL // completed in Start when empty
		v.Notices = true               // the embedded endpoint tells refused readers why
	}
	a.vend = v
	return v
}

// auditVend records a credential handed out.
func (a *App) auditVend(ctx context.Context, action, resource string, detail map[string]any) {
	e := audit.Event{RequestID: restcat.RequestID(ctx), Action: action, Resource: resource, Outcome: audit.OutcomeSuccess, Detail: detail}
	if c, ok := auth.ClaimsFrom(ctx); ok {
		e.Principal = c.Principal
	}
	a.events.Record(ctx, e)
}

// auditObject records one request to the embedded S3 endpoint.
func (a *App) auditObject(ctx context.Context, e s3api.AccessEvent) {
	obs.SetRoute(ctx, e.Operation)
	a.metrics.S3Bytes(e.BytesIn, e.BytesOut)
	if e.Session != nil {
		obs.SetPrincipal(ctx, e.Session.Principal)
	}
	ev := audit.Event{Time: e.Time, RequestID: e.RequestID, ClientAddr: e.ClientAddr, Action: "s3." + e.Operation,
		Resource: "s3://" + e.Bucket + "/" + e.Key, Outcome: audit.OutcomeSuccess,
		Detail: map[string]any{"status": e.Status, "bytes_in": e.BytesIn, "bytes_out": e.BytesOut,
			"duration_ms": e.Duration.Milliseconds()}}
	if e.Status >= 400 {
		ev.Outcome = audit.OutcomeFailure
		ev.Detail["error"] = e.ErrorCode
	}
	if e.Revoked != "" {
		ev.Outcome = audit.OutcomeDenied
		ev.Detail["revoked"] = e.Revoked
	}
	if s := e.Session; s != nil {
		ev.Principal = s.Principal
		ev.Detail["credential_id"] = s.ID
		ev.Detail["access_key_id"] = s.AccessKeyID
		ev.Detail["table"] = s.Table
		ev.Detail["token_id"] = s.TokenID
	}
	a.events.Record(ctx, ev)
}

// listenS3 binds the embedded S3 endpoint and fixes the endpoint URL that
// vended credentials name.
func (a *App) listenS3() error {
	if a.s3 == nil {
		return nil
	}
	ln, err := net.Listen("tcp", a.cfg.S3Listen)
	if err != nil {
		return fmt.Errorf("listen %s (s3 endpoint): %w", a.cfg.S3Listen, err)
	}
	a.s3ln = ln
	if a.vend != nil && a.vend.Endpoint == "" {
		a.vend.Endpoint = a.S3URL()
	}
	var s3h http.Handler = a.s3
	if a.health != nil {
		// The probes answer on the S3 listener too (a bucket named healthz
		// or readyz is shadowed for GET and HEAD of its root).
		s3h = a.health.wrap(s3h)
	}
	a.s3srv = netlimit.New("s3", a.observeS3(a.s3Guard(a.s3TLSHandler(s3h))), a.cfg.HTTP.netlimit(), a.log)
	return nil
}

// HTTPStats returns what the HTTP listeners hold: the REST catalog's and
// the embedded S3 endpoint's (zero when it does not run).
func (a *App) HTTPStats() (catalog, s3 netlimit.Stats) {
	if a.srv != nil {
		catalog = a.srv.Stats()
	}
	if a.s3srv != nil {
		s3 = a.s3srv.Stats()
	}
	return catalog, s3
}

// serveS3 serves the embedded S3 endpoint in the background.
func (a *App) serveS3() {
	if a.s3srv == nil {
		return
	}
	go func() {
		if err := serveOn(a.s3srv, a.s3ln, a.tls.s3); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("s3 endpoint stopped", "err", err)
		}
	}()
}

// S3URL is the URL of the embedded S3 endpoint ("" when it does not run).
func (a *App) S3URL() string {
	if a.cfg.S3PublicURL != "" {
		return a.cfg.S3PublicURL
	}
	if a.s3ln == nil {
		return ""
	}
	return scheme(a.tls.s3) + "://" + a.s3ln.Addr().String()
}

// Objects returns the embedded object store (nil on external S3).
func (a *App) Objects() *bucket.Store { return a.objects }

// Minter returns the credential minter (nil when vending is off).
func (a *App) Minter() vend.Minter { return a.minter }

// RewrapResult counts what RewrapObjects did.
type RewrapResult struct {
	Scanned, Rewrapped, Plaintext int
}

// RewrapObjects re-wraps the data key of every encrypted object in the
// embedded warehouse under the keyring's current key, without rewriting
// data (run it after adding a new key to the key file). It is safe while
// nodes serve: readers keep their unwrapped key and writers create new
// files.
func (a *App) RewrapObjects(ctx context.Context) (RewrapResult, error) {
	var res RewrapResult
	if a.keyring == nil {
		return res, fmt.Errorf("encryption is off: nothing to re-wrap")
	}
	walk := func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		res.Scanned++
		head := make([]byte, 16)
		if n, _ := f.ReadAt(head, 0); !sse.IsEncrypted(head[:n]) {
			res.Plaintext++
			return nil
		}
		changed, err := sse.Rewrap(ctx, f, a.keyring)
		if err != nil {
			return fmt.Errorf("re-wrap %s: %w", path, err)
		}
		if changed {
			res.Rewrapped++
		}
		return nil
	}
	// The warehouse and its cold tier.
	for _, dir := range a.objects.Dirs(a.cfg.Warehouse) {
		if err := filepath.WalkDir(dir, walk); err != nil {
			return res, err
		}
	}
	return res, nil
}
