package config_test

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley/config"
)

// The identity and rate-limit keys: their defaults, and each bad value refused by name.
func TestIdentityAndRateLimitKeys(t *testing.T) {
	t.Parallel()
	c, err := config.Parse([]byte("auth:\n  jwks_url: https://idp.example.com/jwks.json\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Auth.OwnerClaim != "sub" || c.Auth.JWKSRefresh.Std().String() != "1h0m0s" || !c.Auth.Configured() {
		t.Errorf("defaults: got owner claim %q, refresh %s, configured %v; want sub, 1h, true", c.Auth.OwnerClaim, c.Auth.JWKSRefresh.Std(), c.Auth.Configured())
	}
	if *c.RateLimits.Requests != config.DefaultRateRequests || *c.RateLimits.WritesBurst != config.DefaultRateWritesBurst {
		t.Errorf("rate limit defaults: got %d and %d", *c.RateLimits.Requests, *c.RateLimits.WritesBurst)
	}
	if c, err := config.Parse([]byte("rate_limits:\n  requests_per_second: 0\n")); err != nil || *c.RateLimits.Requests != 0 {
		t.Errorf("requests_per_second 0 (off): got %v, %v", err, c.RateLimits.Requests)
	}
	for _, tt := range []struct{ name, yaml, key string }{
		{"JWKS URL not http", "auth:\n  jwks_url: file:///etc/jwks.json\n", "auth.jwks_url"},
		{"negative rate", "rate_limits:\n  writes_per_second: -1\n", "rate_limits.writes_per_second"},
		{"empty bucket", "rate_limits:\n  requests_per_second: 5\n  requests_burst: 0\n", "rate_limits.requests_burst"},
		{"issuer without JWTs", "auth:\n  issuer: https://idp\n  tokens: true\n", "auth.issuer"},
	} {
		if _, err := config.Parse([]byte(tt.yaml)); err == nil || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%s: got %v, want an error naming %s", tt.name, err, tt.key)
		}
	}
}
