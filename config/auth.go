package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

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
	// JWKSURL is an identity provider's JSON Web Key Set, fetched at start and
	// refreshed every JWKSRefresh (default 1h) and when a JWT names an unknown key.
	JWKSURL     string   `yaml:"jwks_url"`
	JWKSRefresh Duration `yaml:"jwks_refresh"`
	// OwnerClaim is the JWT claim naming the owner (default sub).
	OwnerClaim string `yaml:"owner_claim"`
	// Issuer and Audience, when set, must match a JWT's iss and aud.
	Issuer   string `yaml:"issuer"`
	Audience string `yaml:"audience"`
}

// Configured reports whether any authentication is configured.
func (a Auth) Configured() bool {
	return a.Tokens || a.JWTSecret != "" || a.JWKSFile != "" || a.JWKSURL != ""
}

// The defaults of JWT verification.
const (
	DefaultOwnerClaim  = "sub"
	DefaultJWKSRefresh = time.Hour
)

func (a *Auth) applyDefaults() {
	if a.OwnerClaim == "" {
		a.OwnerClaim = DefaultOwnerClaim
	}
	if a.JWKSRefresh == 0 {
		a.JWKSRefresh = Duration(DefaultJWKSRefresh)
	}
}

// JWT reports whether JWTs are accepted.
func (a Auth) JWT() bool { return a.JWTSecret != "" || a.JWKSFile != "" || a.JWKSURL != "" }

// Limits bound what one request may ask for; see graph.Limits. Zero keys take the
// defaults.
type Limits struct {
	MaxDepth                      int   `yaml:"max_depth"`
	MaxAliases                    int   `yaml:"max_aliases"`
	MaxComplexity                 int   `yaml:"max_complexity"`
	MaxPageSize                   int   `yaml:"max_page_size"`
	MaxTokens                     int   `yaml:"max_tokens"`
	MaxSelections                 int   `yaml:"max_selections"`
	MaxPageBytes                  int   `yaml:"max_page_bytes"`
	MaxTranscriptBytes            int   `yaml:"max_transcript_bytes"`
	MaxReplayBytes                int   `yaml:"max_replay_bytes"`
	MaxBodyBytes                  int64 `yaml:"max_body_bytes"`
	MaxWebsocketMessageBytes      int64 `yaml:"max_websocket_message_bytes"`
	MaxSubscriptionsPerConnection int   `yaml:"max_subscriptions_per_connection"`
	// MaxImportBytes bounds a history sent to POST /api/import, which streams it
	// instead of holding it: a body limit of its own, far above MaxBodyBytes.
	MaxImportBytes int64 `yaml:"max_import_bytes"`
	// ImportTimeout bounds one POST /api/import, its body's upload included, in place
	// of the read and request timeouts.
	ImportTimeout Duration `yaml:"import_timeout"`
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
	DefaultMaxComplexity                 = 100000
	DefaultMaxTokens                     = 15000
	DefaultMaxSelections                 = 1000
	DefaultMaxPageBytes                  = 16 << 20
	DefaultMaxTranscriptBytes            = parley.DefaultMaxTranscriptBytes
	DefaultMaxReplayBytes                = 16 << 20
	DefaultMaxBodyBytes                  = 32 << 20
	DefaultMaxWebsocketMessageBytes      = 1 << 20
	DefaultMaxSubscriptionsPerConnection = 50
	DefaultMaxImportBytes                = 4 << 30
	DefaultImportTimeout                 = Duration(time.Hour)
)

func (l *Limits) applyDefaults() {
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&l.MaxDepth, DefaultMaxDepth}, {&l.MaxAliases, DefaultMaxAliases}, {&l.MaxComplexity, DefaultMaxComplexity},
		{&l.MaxPageSize, parley.MaxPageSize}, {&l.MaxTokens, DefaultMaxTokens},
		{&l.MaxSelections, DefaultMaxSelections}, {&l.MaxPageBytes, DefaultMaxPageBytes},
		{&l.MaxTranscriptBytes, DefaultMaxTranscriptBytes}, {&l.MaxReplayBytes, DefaultMaxReplayBytes},
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
	if l.MaxImportBytes == 0 {
		l.MaxImportBytes = DefaultMaxImportBytes
	}
	if l.ImportTimeout == 0 {
		l.ImportTimeout = DefaultImportTimeout
	}
}

func (c *Config) validateAuthAndLimits() error {
	for key, v := range map[string]int64{
		"limits.max_depth": int64(c.Limits.MaxDepth), "limits.max_aliases": int64(c.Limits.MaxAliases),
		"limits.max_complexity": int64(c.Limits.MaxComplexity), "limits.max_page_size": int64(c.Limits.MaxPageSize),
		"limits.max_tokens": int64(c.Limits.MaxTokens), "limits.max_selections": int64(c.Limits.MaxSelections),
		"limits.max_page_bytes":                   int64(c.Limits.MaxPageBytes),
		"limits.max_transcript_bytes":             int64(c.Limits.MaxTranscriptBytes),
		"limits.max_replay_bytes":                 int64(c.Limits.MaxReplayBytes),
		"limits.max_body_bytes":                   c.Limits.MaxBodyBytes,
		"limits.max_websocket_message_bytes":      c.Limits.MaxWebsocketMessageBytes,
		"limits.max_subscriptions_per_connection": int64(c.Limits.MaxSubscriptionsPerConnection),
		"limits.max_import_bytes":                 c.Limits.MaxImportBytes,
		"limits.import_timeout":                   int64(c.Limits.ImportTimeout),
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
	if (c.Auth.Issuer != "" || c.Auth.Audience != "") && !c.Auth.JWT() {
		return keyError("auth.issuer", "issuer and audience apply to JWTs: give auth.jwt_secret, auth.jwks_file or auth.jwks_url too")
	}
	if c.Auth.JWKSURL != "" {
		if u, err := url.Parse(c.Auth.JWKSURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return keyError("auth.jwks_url", fmt.Sprintf("%q is not an http(s) URL", c.Auth.JWKSURL))
		}
	}
	if c.Auth.JWKSRefresh < 0 {
		return keyError("auth.jwks_refresh", "must be positive")
	}
	if c.Auth.OwnerClaim != "" && strings.TrimSpace(c.Auth.OwnerClaim) != c.Auth.OwnerClaim {
		return keyError("auth.owner_claim", fmt.Sprintf("%q has spaces around it", c.Auth.OwnerClaim))
	}
	if err := c.RateLimits.validate(); err != nil {
		return err
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
