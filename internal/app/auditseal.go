package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/awsspans"
	"github.com/floe-lake/floe/objstore/bucket"
)

// sealShutdownTimeout bounds the seal written when the node stops.
const sealShutdownTimeout = 10 * time.Second

// auditSealer writes a seal of the audit chain's head into the warehouse
// every interval and once more when the node stops (see audit.Sealer).
type auditSealer struct {
	sealer   *audit.Sealer
	interval time.Duration
	logger   *slog.Logger
	stop     context.CancelFunc
	done     chan struct{}
}

func (s *auditSealer) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.sealer.Seal(ctx); err != nil && ctx.Err() == nil {
			s.logger.WarnContext(ctx, "audit: writing the checkpoint of the chain head to the warehouse failed; retrying next interval", "err", err)
		}
	}
}

// startAuditSeal starts sealing every audit_checkpoint_interval, unless it
// is 0 (off).
func (a *App) startAuditSeal() {
	if a.cfg.AuditCheckpointInterval <= 0 {
		return
	}
	objs, err := a.SealObjects(context.Background())
	if err != nil {
		a.log.Error("audit: the warehouse checkpoints of the audit chain cannot be written", "err", err)
		return
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "floe"
	}
	s := &auditSealer{sealer: a.audit.NewSealer(objs, fmt.Sprintf("%s-%08x", host, rand.Uint32())),
		interval: a.cfg.AuditCheckpointInterval, logger: a.log, done: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	a.auditSeal = s
	go s.loop(ctx)
}

// stopAuditSeal stops the background sealing (the final seal is written
// by sealAtShutdown, once every event is stored).
func (a *App) stopAuditSeal() {
	if a.auditSeal == nil {
		return
	}
	a.auditSeal.stop()
	<-a.auditSeal.done
}

// sealAtShutdown writes the last seal of a stopping node.
func (a *App) sealAtShutdown(ctx context.Context) error {
	if a.auditSeal == nil {
		return nil
	}
	s := a.auditSeal
	a.auditSeal = nil
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sealShutdownTimeout)
	defer cancel()
	if _, err := s.sealer.Seal(ctx); err != nil {
		return fmt.Errorf("audit: checkpoint at shutdown: %w", err)
	}
	return nil
}

// SealAudit writes a seal of the audit chain's head into the warehouse now
// (also when the background sealing is off).
func (a *App) SealAudit(ctx context.Context, node string) (audit.SealResult, error) {
	objs, err := a.SealObjects(ctx)
	if err != nil {
		return audit.SealResult{}, err
	}
	return a.audit.NewSealer(objs, node).Seal(ctx)
}

// SealObjects returns the warehouse storage of the audit seals: objects
// under <warehouse location>/_floe/audit/checkpoints/, in the embedded
// object store or on external S3.
func (a *App) SealObjects(ctx context.Context) (audit.SealRetirer, error) {
	u, err := url.Parse(a.cfg.WarehouseLocation)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("warehouse location %q: %w", a.cfg.WarehouseLocation, errors.Join(err, errors.New("no bucket")))
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	retired := prefix + audit.RetiredSealPrefix
	prefix += audit.SealPrefix
	if a.objects != nil {
		return bucketSeals{s: a.objects, bucket: u.Host, prefix: prefix, retired: retired}, nil
	}
	ac, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(a.cfg.Region))
	if err != nil {
		return nil, fmt.Errorf("aws configuration: %w", err)
	}
	ac.APIOptions = append(ac.APIOptions, awsspans.APIOption) // S3 calls traced under their request
	client := s3.NewFromConfig(ac, func(o *s3.Options) {
		if a.cfg.S3.Endpoint != "" {
			o.BaseEndpoint = aws.String(a.cfg.S3.Endpoint)
		}
		o.UsePathStyle = a.cfg.S3.PathStyle
	})
	return s3Seals{c: client, bucket: u.Host, prefix: prefix, retired: retired}, nil
}

// bucketSeals keeps seals in the embedded object store.
type bucketSeals struct {
	s                       *bucket.Store
	bucket, prefix, retired string
}

func (b bucketSeals) CreateSeal(ctx context.Context, name string, data []byte) error {
	_, err := b.s.Put(ctx, b.bucket, b.prefix+name, bytes.NewReader(data),
		bucket.PutOptions{Size: int64(len(data)), IfNoneMatch: "*", ContentType: "application/json"})
	if errors.Is(err, bucket.ErrPreconditionFailed) {
		return floe.Wrap(floe.Conflict, err, "the checkpoint %s exists", name)
	}
	return err
}

func (b bucketSeals) ListSeals(ctx context.Context, after string, limit int) ([]string, error) {
	o := bucket.ListOptions{Prefix: b.prefix, MaxKeys: limit}
	if after != "" {
		o.StartAfter = b.prefix + after
	}
	res, err := b.s.List(ctx, b.bucket, o)
	if errors.Is(err, bucket.ErrNoSuchBucket) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(res.Objects))
	for _, obj := range res.Objects {
		out = append(out, strings.TrimPrefix(obj.Key, b.prefix))
	}
	return out, nil
}

func (b bucketSeals) ReadSeal(ctx context.Context, name string, limit int64) ([]byte, error) {
	obj, err := b.s.Get(ctx, b.bucket, b.prefix+name, bucket.GetOptions{})
	if errors.Is(err, bucket.ErrNoSuchKey) {
		return nil, floe.Wrap(floe.NotFound, err, "no checkpoint %s", name)
	}
	if err != nil {
		return nil, err
	}
	defer obj.Body.Close()
	return readLimited(obj.Body, limit, name)
}

// RetireSeal copies the seal under the retired prefix, then deletes it.
func (b bucketSeals) RetireSeal(ctx context.Context, name, dir string) error {
	_, err := b.s.Copy(ctx, b.bucket, b.prefix+name, b.bucket, b.retired+dir+"/"+name, bucket.PutOptions{ContentType: "application/json"})
	if errors.Is(err, bucket.ErrNoSuchKey) {
		return nil // moved already
	}
	if err != nil {
		return err
	}
	return b.s.Delete(ctx, b.bucket, b.prefix+name)
}

// s3Seals keeps seals on external S3.
type s3Seals struct {
	c                       *s3.Client
	bucket, prefix, retired string
}

func (b s3Seals) CreateSeal(ctx context.Context, name string, data []byte) error {
	_, err := b.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.prefix + name),
		Body: bytes.NewReader(data), IfNoneMatch: aws.String("*"), ContentType: aws.String("application/json")})
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && (re.HTTPStatusCode() == 412 || re.HTTPStatusCode() == 409) {
		return floe.Wrap(floe.Conflict, err, "the checkpoint %s exists", name)
	}
	return err
}

func (b s3Seals) ListSeals(ctx context.Context, after string, limit int) ([]string, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket), Prefix: aws.String(b.prefix), MaxKeys: aws.Int32(int32(limit))}
	if after != "" {
		in.StartAfter = aws.String(b.prefix + after)
	}
	res, err := b.c.ListObjectsV2(ctx, in)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(res.Contents))
	for _, o := range res.Contents {
		out = append(out, strings.TrimPrefix(aws.ToString(o.Key), b.prefix))
	}
	return out, nil
}

func (b s3Seals) ReadSeal(ctx context.Context, name string, limit int64) ([]byte, error) {
	res, err := b.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.prefix + name)})
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == 404 {
		return nil, floe.Wrap(floe.NotFound, err, "no checkpoint %s", name)
	}
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	return readLimited(res.Body, limit, name)
}

// RetireSeal copies the seal under the retired prefix, then deletes it.
func (b s3Seals) RetireSeal(ctx context.Context, name, dir string) error {
	_, err := b.c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.retired + dir + "/" + name),
		CopySource: aws.String(url.PathEscape(b.bucket) + "/" + escapeKey(b.prefix+name))})
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == 404 {
		return nil // moved already
	}
	if err != nil {
		return err
	}
	_, err = b.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.prefix + name)})
	return err
}

// escapeKey escapes an object key for CopySource, keeping its slashes.
func escapeKey(k string) string {
	parts := strings.Split(k, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// readLimited reads r whole, refusing more than limit bytes.
func readLimited(r io.Reader, limit int64, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, floe.E(floe.Invalid, "audit", "the checkpoint %s is larger than %d bytes", name, limit)
	}
	return b, nil
}
