package restcat

import (
	"net/http"

	"github.com/floe-lake/floe"
)

type catalogConfig struct {
	Defaults               map[string]string `json:"defaults"`
	Overrides              map[string]string `json:"overrides"`
	Endpoints              []string          `json:"endpoints"`
	IdempotencyKeyLifetime string            `json:"idempotency-key-lifetime,omitempty"`
}

// config serves GET /v1/config: the warehouse (by ?warehouse= or the
// default) becomes the prefix of every other route.
func (h *Handler) config(w http.ResponseWriter, r *http.Request) error {
	name := r.URL.Query().Get("warehouse")
	if name == "" {
		name = h.opts.DefaultWarehouse
	}
	if f := h.foreignNamed(name); f != nil {
		// A foreign catalog: its tables come with the remote's config; the
		// writes it forwards, if its writes are on.
		eps := h.readEndpoints()
		if foreignWriter(f) != nil {
			eps = append(eps, h.writeEndpoints()...)
		}
		writeJSON(w, http.StatusOK, catalogConfig{Defaults: map[string]string{},
			Overrides: map[string]string{"prefix": name, "warehouse": name}, Endpoints: eps})
		return nil
	}
	wh, err := h.cat.Warehouse(r.Context(), name)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return floe.E(floe.NotFound, "warehouse", "Warehouse does not exist: %s", name)
		}
		return err
	}
	cfg := catalogConfig{
		Defaults:  map[string]string{},
		Overrides: map[string]string{"prefix": wh.Name, "warehouse": wh.Name},
		Endpoints: h.Endpoints(),
	}
	if v := h.opts.Vending; v != nil {
		// Where table files are and how to address them; the keys come
		// with each table.
		cfg.Defaults = v.clientConfig()
	}
	if h.opts.Idempotency != nil {
		cfg.IdempotencyKeyLifetime = isoDuration(h.opts.IdempotencyLifetime.Minutes())
	}
	writeJSON(w, http.StatusOK, cfg)
	return nil
}

func isoDuration(minutes float64) string {
	return "PT" + itoa(int(minutes)) + "M"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
