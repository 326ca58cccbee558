package tracing_test

import (
	"context"
	"testing"

	"github.com/floe-lake/floe/internal/tracing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestEnabled: tracing is on with an endpoint in the config or in either
// OTLP endpoint variable, off without one or with OTEL_SDK_DISABLED.
func TestEnabled(t *testing.T) {
	tests := []struct {
		name string
		c    tracing.Config
		want bool
	}{
		{"nothing", tracing.Config{Getenv: env(nil)}, false},
		{"nil getenv", tracing.Config{}, false},
		{"config key", tracing.Config{Endpoint: "http://c:4318", Getenv: env(nil)}, true},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", tracing.Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})}, true},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", tracing.Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})}, true},
		{"OTEL_SDK_DISABLED", tracing.Config{Endpoint: "http://c:4318", Getenv: env(map[string]string{"OTEL_SDK_DISABLED": "true"})}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Enabled(); got != tt.want {
				t.Errorf("Enabled() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNew: off gives the zero tracer; bad endpoints and ratios are
// refused; a good endpoint gives a tracer that shuts down cleanly.
func TestNew(t *testing.T) {
	ctx := context.Background()
	off, err := tracing.New(ctx, tracing.Config{Getenv: env(nil)})
	if err != nil || off.Tracer != nil || off.Shutdown(ctx) != nil {
		t.Fatalf("off: %+v %v", off, err)
	}
	for _, c := range []tracing.Config{
		{Endpoint: "collector:4318"},
		{Endpoint: "ftp://collector"},
		{Endpoint: "http://c:4318", SampleRatio: 1.5},
		{Endpoint: "http://c:4318", SampleRatio: -0.1},
	} {
		if _, err := tracing.New(ctx, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	on, err := tracing.New(ctx, tracing.Config{Endpoint: "http://127.0.0.1:1", SampleRatio: 0.5})
	if err != nil || on.Tracer == nil {
		t.Fatalf("on: %v", err)
	}
	if err := on.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with nothing buffered: %v", err)
	}
}
