package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/parley-dev/parley"
)

// Auth says how requests authenticate. Authentication is configured when tokens is
// true or a JWT secret or JWKS file is given; without it the server runs in local mode
// (every request acts for the local owner) and refuses to listen on anything but a
// loopback address. Whether API tokens exist in the database does not matter: the
// switch is here, so a server's exposure never depends on what a table holds.
type Auth struct {
	// Tokens accepts API tokens (parley token create).
	Tokens bool `yaml:"tokens"`
	// JWTSecret verifies HS256 JWTs (better: PARLEY_JWT_SECRET).
	JWTSecret string `yaml:"jwt_secret"`
	// JWKSFile is a JSON Web Key Set file whose public keys verify JWTs.
	JWKSFile string `yaml:"jwks_file"`
	// Issuer and Audience, when set, must match a JWT's iss and aud.
	Issuer   string `yaml:"issuer"`
	Audience string `yaml:"audience"`
}

// Configured reports whether any authentication is configured.
func (a Auth) Configured() bool { return a.Tokens || a.JWTSecret != "" || a.JWKSFile != "" }

// Limits bound what one request may ask for; see graph.Limits. Zero keys take the
// defaults.
type Limits struct {
	MaxDepth                      int   `yaml:"max_depth"`
	MaxAliases                    int   `yaml:"max_aliases"`
	MaxComplexity                 int   `yaml:"max_complexity"`
	MaxPageSize                   int   `yaml:"max_page_size"`
	MaxTokens                     int   `yaml:"max_tokens"`
	MaxSelections                 int   `yaml:"max_selections"`
	MaxBodyBytes                  int64 `yaml:"max_body_bytes"`
	MaxWebsocketMessageBytes      int64 `yaml:"max_websocket_message_bytes"`
	MaxSubscriptionsPerConnection int   `yaml:"max_subscriptions_per_connection"`
}

// HTTP is what the endpoint lets browsers and tools do.
type HTTP struct {
	// Introspection allows schema introspection (the playground needs it); nil: on.
	Introspection *bool `yaml:"introspection"`
	// WebsocketOrigins are origin patterns ("app.example.com", "*.example.com",
	// "https://app.example.com") allowed to open websockets besides the server's own.
	WebsocketOrigins []string `yaml:"websocket_origins"`
	// TrustedOrigins are origins ("https://app.example.com") whose pages may send
	// cross-origin POSTs; CSRF protection refuses the others.
	TrustedOrigins []string `yaml:"trusted_origins"`
}

// The default request limits (see graph.Limits for what each bounds).
const (
	DefaultMaxDepth                      = 12
	DefaultMaxAliases                    = 30
	DefaultMaxComplexity                 = 50000
	DefaultMaxTokens                     = 15000
	DefaultMaxSelections                 = 1000
	DefaultMaxBodyBytes                  = 32 << 20
	DefaultMaxWebsocketMessageBytes      = 1 << 20
	DefaultMaxSubscriptionsPerConnection = 50
)

func (l *Limits) applyDefaults() {
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&l.MaxDepth, DefaultMaxDepth}, {&l.MaxAliases, DefaultMaxAliases}, {&l.MaxComplexity, DefaultMaxComplexity},
		{&l.MaxPageSize, parley.MaxPageSize}, {&l.MaxTokens, DefaultMaxTokens},
		{&l.MaxSelections, DefaultMaxSelections},
		{&l.MaxSubscriptionsPerConnection, DefaultMaxSubscriptionsPerConnection},
	} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.MaxWebsocketMessageBytes == 0 {
		l.MaxWebsocketMessageBytes = DefaultMaxWebsocketMessageBytes
	}
}

func (c *Config) validateAuthAndLimits() error {
	for key, v := range map[string]int64{
		"limits.max_depth": int64(c.Limits.MaxDepth), "limits.max_aliases": int64(c.Limits.MaxAliases),
		"limits.max_complexity": int64(c.Limits.MaxComplexity), "limits.max_page_size": int64(c.Limits.MaxPageSize),
		"limits.max_tokens": int64(c.Limits.MaxTokens), "limits.max_selections": int64(c.Limits.MaxSelections),
		"limits.max_body_bytes":                   c.Limits.MaxBodyBytes,
		"limits.max_websocket_message_bytes":      c.Limits.MaxWebsocketMessageBytes,
		"limits.max_subscriptions_per_connection": int64(c.Limits.MaxSubscriptionsPerConnection),
	} {
		if v < 0 {
			return keyError(key, "must be positive")
		}
	}
	if c.Limits.MaxPageSize > parley.MaxPageSize {
		return keyError("limits.max_page_size", fmt.Sprintf("%d is more than %d, the most the store reads at once", c.Limits.MaxPageSize, parley.MaxPageSize))
	}
	if c.Auth.JWTSecret != "" && len(c.Auth.JWTSecret) < 32 {
		return keyError("auth.jwt_secret", "must be at least 32 bytes: an HS256 secret shorter than its hash can be guessed")
	}
	if (c.Auth.Issuer != "" || c.Auth.Audience != "") && c.Auth.JWTSecret == "" && c.Auth.JWKSFile == "" {
		return keyError("auth.issuer", "issuer and audience apply to JWTs: give auth.jwt_secret or auth.jwks_file too")
	}
	for i, o := range c.HTTP.TrustedOrigins {
		if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return keyError(fmt.Sprintf("http.trusted_origins[%d]", i), fmt.Sprintf("%q is not an origin like https://app.example.com", o))
		}
	}
	for i, h := range c.Render.ImageHosts {
		if h = strings.TrimSpace(h); h == "" || strings.ContainsAny(h, "/:") {
			return keyError(fmt.Sprintf("render.image_hosts[%d]", i), fmt.Sprintf("%q is not a host name or pattern like images.example.com, *.example.com or *", h))
		}
	}
	for i, p := range c.HTTP.WebsocketOrigins {
		if strings.TrimSpace(p) == "" {
			return keyError(fmt.Sprintf("http.websocket_origins[%d]", i), "is empty")
		}
	}
	return nil
}
