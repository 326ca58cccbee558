package cli

import (
	"github.com/spf13/pflag"

	"github.com/floe-lake/floe/internal/app"
)

// httpLimitFlags declares the serve flags of the HTTP listener limits
// (app.HTTPLimits) and returns a function that applies those set on the
// command line to a configuration.
func httpLimitFlags(fs *pflag.FlagSet) func(*app.Config) {
	def := app.Defaults().HTTP
	maxConns := fs.Int("http-max-conns", def.MaxConns, "connections each HTTP listener holds at most; at the cap the oldest idle or still-sending connection is closed (env FLOE_HTTP_MAX_CONNS)")
	perIP := fs.Int("http-max-pending-per-ip", def.MaxPendingPerIP, "connections per client IP still sending a request, per HTTP listener (env FLOE_HTTP_MAX_PENDING_PER_IP)")
	header := fs.Duration("http-header-timeout", def.HeaderTimeout, "time a client may take to send request headers (env FLOE_HTTP_HEADER_TIMEOUT)")
	body := fs.Duration("http-body-timeout", def.BodyTimeout, "longest stall of a request body; also its grace before http-body-min-rate applies (env FLOE_HTTP_BODY_TIMEOUT)")
	rate := fs.Int64("http-body-min-rate", def.BodyMinRate, "slowest average rate of a request body, bytes per second (env FLOE_HTTP_BODY_MIN_RATE)")
	idle := fs.Duration("http-idle-timeout", def.IdleTimeout, "keep-alive connections idle this long are closed (env FLOE_HTTP_IDLE_TIMEOUT)")
	hdrBytes := fs.Int("http-max-header-bytes", def.MaxHeaderBytes, "largest request header block (env FLOE_HTTP_MAX_HEADER_BYTES)")
	return func(cfg *app.Config) {
		h := &cfg.HTTP
		for name, set := range map[string]func(){
			"http-max-conns":          func() { h.MaxConns = *maxConns },
			"http-max-pending-per-ip": func() { h.MaxPendingPerIP = *perIP },
			"http-header-timeout":     func() { h.HeaderTimeout = *header },
			"http-body-timeout":       func() { h.BodyTimeout = *body },
			"http-body-min-rate":      func() { h.BodyMinRate = *rate },
			"http-idle-timeout":       func() { h.IdleTimeout = *idle },
			"http-max-header-bytes":   func() { h.MaxHeaderBytes = *hdrBytes },
		} {
			if fs.Changed(name) {
				set()
			}
		}
	}
}
