// Command dsfixture runs a real Floe node (REST catalog, S3 endpoint, Delta
// Sharing server) whose sharing.Resolver reads shares and recipients from a
// JSON file, for the Delta Sharing interop test
// (tests/interop/python/test_delta_sharing.py) until the sharing service
// exists. It is a test fixture: never deploy it.
//
// Usage: dsfixture -dir DATA_DIR -shares SHARES.json
//
// It prints one JSON line {"url","s3_url","credential"} once serving and
// runs until its standard input closes. The shares file, re-read on every
// request, is
//
//	{"recipients": {"<token>": {"id", "name", "token_id", "revoked"}},
//	 "grants": {"<recipient name>": ["<share>", ...]},
//	 "tables": [{"id", "share", "schema", "name", "namespace", "table",
//	             "history", "partition_filter", "view"}]}
//
// A recipient marked revoked no longer authenticates, and its token id is
// revoked in the store as the sharing service does, so that URLs already
// handed out stop working.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/sharing"
)

type recipientJSON struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	TokenID string `json:"token_id"`
	Revoked bool   `json:"revoked"`
}

type tableJSON struct {
	ID              string `json:"id"`
	Share           string `json:"share"`
	Schema          string `json:"schema"`
	Name            string `json:"name"`
	Namespace       string `json:"namespace"`
	Table           string `json:"table"`
	History         bool   `json:"history"`
	PartitionFilter string `json:"partition_filter"`
	View            bool   `json:"view"`
}

type sharesJSON struct {
	Recipients map[string]recipientJSON `json:"recipients"`
	Grants     map[string][]string      `json:"grants"`
	Tables     []tableJSON              `json:"tables"`
}

// fileResolver is a sharing.Resolver over the shares file.
type fileResolver struct {
	path      string
	warehouse string
	revoke    func(ctx context.Context, tokenID string) error

	mu      sync.Mutex
	revoked map[string]bool // token ids revoked in the store
}

func (f *fileResolver) load(ctx context.Context) (sharesJSON, error) {
	var s sharesJSON
	b, err := os.ReadFile(f.path)
	if err != nil {
		return s, fmt.Errorf("read shares file: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("parse shares file: %w", err)
	}
	for _, r := range s.Recipients {
		if !r.Revoked {
			continue
		}
		f.mu.Lock()
		done := f.revoked[r.TokenID]
		f.mu.Unlock()
		if !done {
			if err := f.revoke(ctx, r.TokenID); err != nil {
				return s, err
			}
			f.mu.Lock()
			f.revoked[r.TokenID] = true
			f.mu.Unlock()
		}
	}
	return s, nil
}

func (f *fileResolver) Authenticate(ctx context.Context, token string, _ netip.Addr) (sharing.Recipient, error) {
	s, err := f.load(ctx)
	if err != nil {
		return sharing.Recipient{}, err
	}
	r, ok := s.Recipients[token]
	if !ok || r.Revoked {
		return sharing.Recipient{}, floe.E(floe.Unauthenticated, "recipient", "invalid, expired or revoked bearer token")
	}
	return sharing.Recipient{ID: r.ID, Name: r.Name, TokenID: r.TokenID}, nil
}

func (f *fileResolver) Shares(ctx context.Context, r sharing.Recipient) ([]sharing.Share, error) {
	s, err := f.load(ctx)
	if err != nil {
		return nil, err
	}
	var out []sharing.Share
	for _, n := range s.Grants[r.Name] {
		out = append(out, sharing.Share{ID: "share-" + n, Name: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (f *fileResolver) Tables(ctx context.Context, r sharing.Recipient, share string) ([]sharing.Table, error) {
	s, err := f.load(ctx)
	if err != nil {
		return nil, err
	}
	granted := false
	for _, n := range s.Grants[r.Name] {
		granted = granted || strings.EqualFold(n, share)
	}
	if !granted {
		return nil, floe.E(floe.NotFound, "share", "share %s does not exist", share)
	}
	var out []sharing.Table
	for _, t := range s.Tables {
		if !strings.EqualFold(t.Share, share) {
			continue
		}
		out = append(out, sharing.Table{ID: t.ID, Share: t.Share, Schema: t.Schema, Name: t.Name, Warehouse: f.warehouse,
			Ident: catalog.Ident{Namespace: catalog.Namespace{t.Namespace}, Name: t.Table}, IsView: t.View,
			History: t.History, PartitionFilter: t.PartitionFilter})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Schema != out[j].Schema {
			return out[i].Schema < out[j].Schema
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func (f *fileResolver) Table(ctx context.Context, r sharing.Recipient, share, schema, name string) (sharing.Table, error) {
	ts, err := f.Tables(ctx, r, share)
	if err != nil {
		return sharing.Table{}, err
	}
	for _, t := range ts {
		if strings.EqualFold(t.Schema, schema) && strings.EqualFold(t.Name, name) {
			return t, nil
		}
	}
	return sharing.Table{}, floe.E(floe.NotFound, "table", "table %s.%s.%s does not exist", share, schema, name)
}

func (f *fileResolver) Revoked(ctx context.Context, r sharing.Recipient) (bool, error) {
	s, err := f.load(ctx)
	if err != nil {
		return false, err
	}
	for _, rc := range s.Recipients {
		if rc.TokenID == r.TokenID {
			return rc.Revoked, nil
		}
	}
	return true, nil
}

func main() {
	dir := flag.String("dir", "", "data directory")
	shares := flag.String("shares", "", "shares file (JSON)")
	ttl := flag.Duration("url-ttl", 15*time.Minute, "sharing_url_ttl")
	flag.Parse()
	if *dir == "" || *shares == "" {
		fmt.Fprintln(os.Stderr, "usage: dsfixture -dir DATA_DIR -shares SHARES.json")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := app.Defaults()
	cfg.DataDir, cfg.Listen, cfg.S3Listen, cfg.SQLListen = *dir, "127.0.0.1:0", "127.0.0.1:0", "off"
	cfg.BootstrapCredential = "fixture-admin:fixture-admin-secret"
	cfg.SharingURLTTL = *ttl
	res := &fileResolver{path: *shares, warehouse: cfg.Warehouse, revoked: map[string]bool{}}
	cfg.SharingResolver = res
	a, err := app.Open(context.Background(), cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsfixture:", err)
		os.Exit(1)
	}
	res.revoke = func(ctx context.Context, tokenID string) error {
		return a.Store().RevokeToken(ctx, tokenID, time.Now().Add(time.Hour))
	}
	if err := a.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "dsfixture:", err)
		os.Exit(1)
	}
	line, _ := json.Marshal(map[string]string{"url": a.URL(), "s3_url": a.S3URL(), "credential": cfg.BootstrapCredential})
	fmt.Println(string(line))
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes stdin
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "dsfixture:", err)
	}
}
