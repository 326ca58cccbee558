package restcat

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"sync"

	"github.com/google/uuid"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
)

// recorder captures a response so that it can be stored for replay.
type recorder struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (r *recorder) WriteHeader(s int) {
	if r.status == 0 {
		r.status = s
	}
	r.ResponseWriter.WriteHeader(s)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.buf.Write(b)
	return r.ResponseWriter.Write(b)
}

type storedHeader struct {
	ContentType string `json:"ct,omitempty"`
	ETag        string `json:"etag,omitempty"`
}

// replayable reports whether a final response may be replayed for a repeated
// key: successes and deterministic client errors, never 5xx nor auth failures.
func replayable(status int) bool {
	switch {
	case status >= 200 && status < 300:
		return true
	case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusRequestTimeout, status == http.StatusTooManyRequests:
		return false
	case status >= 400 && status < 500:
		return true
	}
	return false
}

// idempotent runs fn at most once per (principal, method, path, key) within
// the advertised lifetime and replays its final response to repeats.
func (h *Handler) idempotent(w http.ResponseWriter, r *http.Request, key string, fn func(http.ResponseWriter, *http.Request) error) error {
	if _, err := uuid.Parse(key); err != nil || len(key) != 36 {
		return floe.E(floe.Invalid, "", "Idempotency-Key must be a UUID in its 36-character form (UUIDv7 recommended)")
	}
	who := ""
	if c, ok := auth.ClaimsFrom(r.Context()); ok {
		who = c.PrincipalID
	}
	sum := sha256.Sum256([]byte(who + "\x00" + r.Method + "\x00" + r.URL.Path + "\x00" + key))
	k := hex.EncodeToString(sum[:])
	unlock := h.keys.lock(k)
	defer unlock()
	status, header, body, ok, err := h.opts.Idempotency.LoadIdempotent(r.Context(), k)
	if err != nil {
		return err
	}
	if ok {
		var sh storedHeader
		_ = json.Unmarshal([]byte(header), &sh)
		if sh.ContentType != "" {
			w.Header().Set("Content-Type", sh.ContentType)
		}
		if sh.ETag != "" {
			w.Header().Set("ETag", sh.ETag)
		}
		w.Header().Set("Idempotency-Replayed", "true")
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return nil
	}
	rec := &recorder{ResponseWriter: w}
	if err := fn(rec, r); err != nil {
		writeError(rec, r, h.log, err)
	}
	if replayable(rec.status) {
		sh, _ := json.Marshal(storedHeader{ContentType: rec.Header().Get("Content-Type"), ETag: rec.Header().Get("ETag")})
		if err := h.opts.Idempotency.SaveIdempotent(r.Context(), k, rec.status, string(sh), rec.buf.Bytes()); err != nil {
			h.log.WarnContext(r.Context(), "cannot store idempotent response", "err", err)
		}
	}
	return nil
}

// keyLocks serialises requests that carry the same idempotency key on this node.
type keyLocks struct{ stripes [64]sync.Mutex }

func newKeyLocks() *keyLocks { return &keyLocks{} }

func (k *keyLocks) lock(key string) func() {
	f := fnv.New32a()
	_, _ = f.Write([]byte(key))
	m := &k.stripes[f.Sum32()%uint32(len(k.stripes))]
	m.Lock()
	return m.Unlock
}
