package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/floe-lake/floe/internal/obs"
)

// readyCacheTTL is how long a readiness result is reused: probes (and any
// unauthenticated caller) cost at most one round of checks per interval.
const readyCacheTTL = time.Second

// readyTimeout bounds one round of readiness checks.
const readyTimeout = 5 * time.Second

// health answers the liveness and readiness probes, unauthenticated, on
// the catalog and S3 listeners: GET or HEAD /healthz (the process serves)
// and /readyz (the store answers with every migration, the warehouse takes
// a write, the token-signing keys are loaded). Answers name the checks and
// whether each passed, never why (that is logged).
type health struct {
	a     *App
	probe string // the warehouse object the write check writes and deletes

	mu     sync.Mutex
	at     time.Time
	status int
	body   []byte
}

func newHealth(a *App) *health {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	loc := strings.TrimSuffix(a.cfg.WarehouseLocation, "/") + "/_floe_readyz/" + hex.EncodeToString(b)
	return &health{a: a, probe: loc}
}

// wrap serves the probes in front of next.
func (h *health) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.URL.Path != "/healthz" && r.URL.Path != "/readyz") || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			next.ServeHTTP(w, r)
			return
		}
		obs.SetRoute(r.Context(), r.URL.Path)
		status, body := http.StatusOK, []byte(`{"status":"up"}`)
		if r.URL.Path == "/readyz" {
			status, body = h.ready(r.Context())
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}

// ready runs the checks, or reuses a result younger than readyCacheTTL.
func (h *health) ready(ctx context.Context) (int, []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.at) < readyCacheTTL && h.body != nil {
		return h.status, h.body
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyTimeout)
	defer cancel()
	checks := map[string]string{}
	ok := true
	check := func(name string, err error) {
		if err != nil {
			ok = false
			checks[name] = "failed"
			h.a.log.WarnContext(ctx, "readiness check failed", "check", name, "err", err)
			return
		}
		checks[name] = "ok"
	}
	check("store", h.a.store.Ready(ctx))
	check("warehouse", h.writable(ctx))
	if h.a.auth != nil {
		check("keys", h.keys(ctx))
	}
	status, word := http.StatusOK, "ready"
	if !ok {
		status, word = http.StatusServiceUnavailable, "not ready"
	}
	body, _ := json.Marshal(map[string]any{"status": word, "checks": checks})
	h.at, h.status, h.body = time.Now(), status, body
	return status, body
}

// writable writes, reads back and deletes a small object in the warehouse.
func (h *health) writable(ctx context.Context) error {
	fio := h.a.warehouseIO
	if fio == nil {
		return nil
	}
	want := []byte(time.Now().UTC().Format(time.RFC3339Nano))
	if err := fio.WriteFile(ctx, h.probe, want); err != nil {
		return err
	}
	got, err := fio.ReadFile(ctx, h.probe)
	if err != nil {
		return err
	}
	if string(got) != string(want) {
		return errProbeMismatch
	}
	return fio.Delete(ctx, h.probe)
}

// keys checks that a token-signing key is loaded.
func (h *health) keys(ctx context.Context) error {
	set, err := h.a.auth.JWKS(ctx)
	if err != nil {
		return err
	}
	if len(set.Keys) == 0 {
		return errNoSigningKey
	}
	return nil
}

type healthError string

func (e healthError) Error() string { return string(e) }

const (
	errProbeMismatch healthError = "the warehouse returned other bytes than were written"
	errNoSigningKey  healthError = "no token-signing key is loaded"
)
