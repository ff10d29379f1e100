package event

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.MaxFuture != 10*time.Minute || c.MaxAge != 0 || c.MaxLine != 1<<20 || len(c.Dimensions) != 0 {
		t.Fatalf("DefaultConfig() = %+v, want SPEC defaults (10m, off, 1MiB, none)", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v, want nil", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string // substring; "" means valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"dimensions and max-age", func(c *Config) { c.Dimensions = []string{"region", "platform"}; c.MaxAge = 48 * time.Hour }, ""},
		{"unicode dimension", func(c *Config) { c.Dimensions = []string{"région"} }, ""},
		{"max-future 1ms", func(c *Config) { c.MaxFuture = time.Millisecond }, ""},
		{"max-line 1", func(c *Config) { c.MaxLine = 1 }, ""},
		{"max-future zero", func(c *Config) { c.MaxFuture = 0 }, "--max-future must be positive"},
		{"max-future negative", func(c *Config) { c.MaxFuture = -time.Second }, "--max-future must be positive"},
		{"max-age negative", func(c *Config) { c.MaxAge = -time.Hour }, "--max-age must not be negative"},
		{"max-line zero", func(c *Config) { c.MaxLine = 0 }, "--max-line must be positive"},
		{"max-line negative", func(c *Config) { c.MaxLine = -5 }, "--max-line must be positive"},
		{"empty dimension", func(c *Config) { c.Dimensions = []string{"region", ""} }, "--dimensions: field 2: empty field name"},
		{"duplicate dimension", func(c *Config) { c.Dimensions = []string{"region", "sku", "region"} }, `--dimensions: field "region" is listed twice`},
		{"required field event_id", func(c *Config) { c.Dimensions = []string{"event_id"} }, `"event_id" is a required input field`},
		{"required field event_time", func(c *Config) { c.Dimensions = []string{"event_time"} }, `"event_time" is a required input field`},
		{"required field user_id", func(c *Config) { c.Dimensions = []string{"user_id"} }, `"user_id" is a required input field`},
		{"required field amount", func(c *Config) { c.Dimensions = []string{"region", "amount"} }, `--dimensions: field 2: field "amount" is a required input field`},
		{"surrounding space", func(c *Config) { c.Dimensions = []string{"region", " sku"} }, "surrounding whitespace"},
		{"control character", func(c *Config) { c.Dimensions = []string{"a\tb"} }, "control character"},
		{"invalid utf-8", func(c *Config) { c.Dimensions = []string{"a\xffb"} }, "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("Validate() = nil, want error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("Validate() = %q, want it to contain %q", err, tt.wantErr)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("Validate() = %q, want a one-line error", err)
			}
		})
	}
}
