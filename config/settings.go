package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scope says which commands take a setting.
type Scope int

// The scopes.
const (
	// Global settings are flags of every command (given before or after it).
	Global Scope = iota
	// Database settings select the database: serve, migrate, import, export, token.
	Database
	// Serve settings are serve's.
	Serve
	// Owner settings are import's and export's.
	Owner
	// Client settings make import, export and conversations a client of a running
	// server.
	Client
)

// Setting is one setting as the command line, the environment and the configuration
// file know it, declared once: cmd/parley makes its flags (and so --help, with the
// real default) from it, applies what was given over the file, and the README's
// configuration table is checked against it.
type Setting struct {
	// Flag is the flag's name, without dashes.
	Flag string
	// Env is the environment variable that gives it when the flag is not given.
	Env string
	// Key is the configuration file's key; "" when the file has none.
	Key string
	// Usage is the flag's help, without the key or the default, which are added.
	Usage string
	// DefaultNote says what the default is when it is worked out where Parley runs
	// (Field's value is then empty).
	DefaultNote string
	Scope       Scope
	// Field points at the setting in c: a *string, *bool, *int, *int64,
	// *time.Duration or *[]string, whose value in Default() is the default.
	Field func(c *Config) any
}

// Settings are every setting a flag or an environment variable gives, in the order
// --help lists them.
var Settings = []Setting{
	{Flag: "log-level", Env: "PARLEY_LOG_LEVEL", Usage: "debug, info, warn or error", Scope: Global,
		Field: func(c *Config) any { return &c.Process.LogLevel }},
	{Flag: "log-format", Env: "PARLEY_LOG_FORMAT", Usage: "text or json", Scope: Global,
		Field: func(c *Config) any { return &c.Process.LogFormat }},

	{Flag: "database-url", Env: "DATABASE_URL", Usage: "PostgreSQL URL; without it Parley runs its own Postgres in --data-dir", Scope: Database,
		Field: func(c *Config) any { return &c.Process.DatabaseURL }},
	{Flag: "data-dir", Env: "PARLEY_DATA_DIR", Usage: "where the embedded Postgres keeps its data", Scope: Database,
		DefaultNote: "$XDG_DATA_HOME/parley or ~/.local/share/parley; /var/lib/parley as root",
		Field:       func(c *Config) any { return &c.Process.DataDir }},

	{Flag: "config", Env: "PARLEY_CONFIG", Usage: "a YAML (or JSON) configuration file: workspace, agents, tool policies, MCP servers, vision, OCR, fetch limits, auth, limits, http (see README)", Scope: Serve,
		Field: func(c *Config) any { return &c.Process.ConfigFile }},
	{Flag: "addr", Env: "PARLEY_ADDR", Usage: "HOST:PORT to listen on", Scope: Serve,
		Field: func(c *Config) any { return &c.Process.Addr }},
	{Flag: "introspection", Env: "PARLEY_INTROSPECTION", Key: "http.introspection", Usage: "allow GraphQL schema introspection (the playground needs it)", Scope: Serve,
		Field: func(c *Config) any { return c.HTTP.Introspection }},
	{Flag: "shutdown-timeout", Env: "PARLEY_SHUTDOWN_TIMEOUT", Usage: "how long in-flight requests may take to finish on shutdown", Scope: Serve,
		Field: func(c *Config) any { return &c.Process.ShutdownTimeout }},
	{Flag: "request-timeout", Env: "PARLEY_REQUEST_TIMEOUT", Usage: "how long one query or mutation may run before it is cancelled (0: no limit); above the processing steps' own timeouts (vision, OCR, fetch, MCP)", Scope: Serve,
		Field: func(c *Config) any { return &c.Process.RequestTimeout }},
	{Flag: "read-timeout", Env: "PARLEY_READ_TIMEOUT", Usage: "how long a client may take to send one request, body included (websockets and SSE streams are not cut by it)", Scope: Serve,
		Field: func(c *Config) any { return &c.Process.ReadTimeout }},
	{Flag: "idle-timeout", Env: "PARLEY_IDLE_TIMEOUT", Usage: "how long a keep-alive connection may wait for its next request before it is closed", Scope: Serve,
		Field: func(c *Config) any { return &c.Process.IdleTimeout }},
	{Flag: "max-connections", Env: "PARLEY_MAX_CONNECTIONS", Usage: "the most connections open at once; more wait until one closes", Scope: Serve,
		Field: func(c *Config) any { return &c.Process.MaxConnections }},
	{Flag: "metrics-addr", Env: "PARLEY_METRICS_ADDR", Usage: `HOST:PORT to serve Prometheus metrics (/metrics) on, apart from the API; empty: at /metrics on --addr, or on 127.0.0.1:9464 when authentication is configured; "off": nowhere`, Scope: Serve,
		Field: func(c *Config) any { return &c.Process.MetricsAddr }},
	{Flag: "debug-addr", Env: "PARLEY_DEBUG_ADDR", Usage: "HOST:PORT to serve Go's profiles (/debug/pprof/) and runtime counters (/debug/vars) on; off when empty", Scope: Serve,
		Field: func(c *Config) any { return &c.Process.DebugAddr }},
	{Flag: "io-uring", Env: "PARLEY_IO_URING", Usage: "send websocket deliveries to many subscribers in batches through Linux's io_uring, where the kernel allows it; false sends each with a system call of its own (for a seccomp profile or kernel.io_uring_disabled that forbids io_uring)", Scope: Serve,
		Field: func(c *Config) any { return &c.Process.IOUring }},

	{Flag: "workspace-root", Env: "PARLEY_WORKSPACE_ROOT", Key: "workspace.root", Usage: "the directory file references and image files are read from", Scope: Serve,
		Field: func(c *Config) any { return &c.Workspace.Root }},
	{Flag: "vision-url", Env: "PARLEY_VISION_URL", Key: "vision.url", Usage: "an OpenAI-compatible API base URL for image recognition, e.g. https://api.openai.com/v1", Scope: Serve,
		Field: func(c *Config) any { return &c.Vision.URL }},
	{Flag: "vision-model", Env: "PARLEY_VISION_MODEL", Key: "vision.model", Usage: "the vision model", Scope: Serve,
		Field: func(c *Config) any { return &c.Vision.Model }},
	{Flag: "vision-api-key", Env: "PARLEY_VISION_API_KEY", Key: "vision.api_key", Usage: "the vision endpoint's API key (prefer the environment variable)", Scope: Serve,
		Field: func(c *Config) any { return &c.Vision.APIKey }},

	{Flag: "auth-tokens", Env: "PARLEY_AUTH_TOKENS", Key: "auth.tokens", Usage: "accept API tokens made with parley token create", Scope: Serve,
		Field: func(c *Config) any { return &c.Auth.Tokens }},
	{Flag: "jwt-secret", Env: "PARLEY_JWT_SECRET", Key: "auth.jwt_secret", Usage: "verify HS256 JWTs with this secret, at least 32 bytes (prefer the variable)", Scope: Serve,
		Field: func(c *Config) any { return &c.Auth.JWTSecret }},
	{Flag: "jwks-file", Env: "PARLEY_JWKS_FILE", Key: "auth.jwks_file", Usage: "verify JWTs with the public keys of this JSON Web Key Set file", Scope: Serve,
		Field: func(c *Config) any { return &c.Auth.JWKSFile }},
	{Flag: "jwks-url", Env: "PARLEY_JWKS_URL", Key: "auth.jwks_url", Usage: "verify JWTs with the public keys an identity provider publishes at this URL (a JSON Web Key Set), fetched at start and refreshed", Scope: Serve,
		Field: func(c *Config) any { return &c.Auth.JWKSURL }},
	{Flag: "jwks-refresh", Env: "PARLEY_JWKS_REFRESH", Key: "auth.jwks_refresh", Usage: "how often to fetch --jwks-url again (also at once, at most every 10s, when a JWT names an unknown key)", Scope: Serve,
		Field: func(c *Config) any { return (*time.Duration)(&c.Auth.JWKSRefresh) }},
	{Flag: "jwt-owner-claim", Env: "PARLEY_JWT_OWNER_CLAIM", Key: "auth.owner_claim", Usage: "the JWT claim that names the owner", Scope: Serve,
		Field: func(c *Config) any { return &c.Auth.OwnerClaim }},
	{Flag: "jwt-issuer", Env: "PARLEY_JWT_ISSUER", Key: "auth.issuer", Usage: "require this iss in JWTs", Scope: Serve,
		Field: func(c *Config) any { return &c.Auth.Issuer }},
	{Flag: "jwt-audience", Env: "PARLEY_JWT_AUDIENCE", Key: "auth.audience", Usage: "require this aud in JWTs", Scope: Serve,
		Field: func(c *Config) any { return &c.Auth.Audience }},

	{Flag: "max-depth", Env: "PARLEY_MAX_DEPTH", Key: "limits.max_depth", Usage: "how deeply an operation's fields may nest", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxDepth }},
	{Flag: "max-aliases", Env: "PARLEY_MAX_ALIASES", Key: "limits.max_aliases", Usage: "how many aliases an operation may have", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxAliases }},
	{Flag: "max-complexity", Env: "PARLEY_MAX_COMPLEXITY", Key: "limits.max_complexity", Usage: "an operation's largest cost, lists weighted by their page size", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxComplexity }},
	{Flag: "max-page-size", Env: "PARLEY_MAX_PAGE_SIZE", Key: "limits.max_page_size", Usage: "the largest first, last or ids (at most 1000)", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxPageSize }},
	{Flag: "max-tokens", Env: "PARLEY_MAX_TOKENS", Key: "limits.max_tokens", Usage: "the most tokens a query document may have", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxTokens }},
	{Flag: "max-selections", Env: "PARLEY_MAX_SELECTIONS", Key: "limits.max_selections", Usage: "the most selections a query document may have, fragments counted each time they are spread", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxSelections }},
	{Flag: "max-page-bytes", Env: "PARLEY_MAX_PAGE_BYTES", Key: "limits.max_page_bytes", Usage: "the bytes of stored messages one response's message pages may hold together; a page past it ends early, with hasNextPage (or hasPreviousPage) true", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxPageBytes }},
	{Flag: "max-transcript-bytes", Env: "PARLEY_MAX_TRANSCRIPT_BYTES", Key: "limits.max_transcript_bytes", Usage: "the bytes of stored messages one transcript (transcript, transcriptReport) may read; a longer history is refused with TRANSCRIPT_TOO_LARGE", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxTranscriptBytes }},
	{Flag: "max-replay-bytes", Env: "PARLEY_MAX_REPLAY_BYTES", Key: "limits.max_replay_bytes", Usage: "the stored bytes of messages (and appends) one read of a subscription's replay may hold; a subscriber far behind catches up a budget at a time (the first message of a read always fits)", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxReplayBytes }},
	{Flag: "max-body-bytes", Env: "PARLEY_MAX_BODY_BYTES", Key: "limits.max_body_bytes", Usage: "the largest request body", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxBodyBytes }},
	{Flag: "max-websocket-message-bytes", Env: "PARLEY_MAX_WEBSOCKET_MESSAGE_BYTES", Key: "limits.max_websocket_message_bytes", Usage: "the largest message a client may send over a websocket", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxWebsocketMessageBytes }},
	{Flag: "max-subscriptions-per-connection", Env: "PARLEY_MAX_SUBSCRIPTIONS_PER_CONNECTION", Key: "limits.max_subscriptions_per_connection", Usage: "how many subscriptions one websocket may have open", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxSubscriptionsPerConnection }},
	{Flag: "rate-limit", Env: "PARLEY_RATE_LIMIT", Key: "rate_limits.requests_per_second", Usage: "requests per second one owner may send to /graphql, sustained (0: no limit; never in local mode)", Scope: Serve,
		Field: func(c *Config) any { return c.RateLimits.Requests }},
	{Flag: "rate-burst", Env: "PARLEY_RATE_BURST", Key: "rate_limits.requests_burst", Usage: "requests one owner may send at once above --rate-limit", Scope: Serve,
		Field: func(c *Config) any { return c.RateLimits.RequestsBurst }},
	{Flag: "write-rate-limit", Env: "PARLEY_WRITE_RATE_LIMIT", Key: "rate_limits.writes_per_second", Usage: "mutations per second one owner may run, sustained, over every transport (0: no limit; never in local mode)", Scope: Serve,
		Field: func(c *Config) any { return c.RateLimits.Writes }},
	{Flag: "write-rate-burst", Env: "PARLEY_WRITE_RATE_BURST", Key: "rate_limits.writes_burst", Usage: "mutations one owner may run at once above --write-rate-limit", Scope: Serve,
		Field: func(c *Config) any { return c.RateLimits.WritesBurst }},
	{Flag: "max-import-bytes", Env: "PARLEY_MAX_IMPORT_BYTES", Key: "limits.max_import_bytes", Usage: "the largest history POST /api/import (parley import --server) reads, streamed rather than held", Scope: Serve,
		Field: func(c *Config) any { return &c.Limits.MaxImportBytes }},
	{Flag: "import-timeout", Env: "PARLEY_IMPORT_TIMEOUT", Key: "limits.import_timeout", Usage: "how long one POST /api/import may take, its upload included (in place of --read-timeout and --request-timeout)", Scope: Serve,
		Field: func(c *Config) any { return (*time.Duration)(&c.Limits.ImportTimeout) }},
	{Flag: "websocket-origin", Env: "PARLEY_WEBSOCKET_ORIGINS", Key: "http.websocket_origins", Usage: "an origin pattern allowed to open websockets besides the server's own, e.g. *.example.com; repeatable", Scope: Serve,
		Field: func(c *Config) any { return &c.HTTP.WebsocketOrigins }},
	{Flag: "trusted-origin", Env: "PARLEY_TRUSTED_ORIGINS", Key: "http.trusted_origins", Usage: "an origin whose pages may POST cross-origin, e.g. https://app.example.com; repeatable", Scope: Serve,
		Field: func(c *Config) any { return &c.HTTP.TrustedOrigins }},
	{Flag: "image-host", Env: "PARLEY_IMAGE_HOSTS", Key: "render.image_hosts", Usage: "a host images in messages may load from in html fields, e.g. images.example.com, *.example.com or * for all (others are rendered as links); repeatable", Scope: Serve,
		Field: func(c *Config) any { return &c.Render.ImageHosts }},
	{Flag: "search-config", Env: "PARLEY_SEARCH_CONFIG", Key: "search.config", Usage: "the Postgres text search configuration search uses (simple, english, or any the database has); a change rebuilds every message's search vector at start", Scope: Serve,
		Field: func(c *Config) any { return &c.Search.Config }},

	{Flag: "server", Env: "PARLEY_SERVER", Usage: "the URL of a running Parley (http://127.0.0.1:8080) to talk to over its HTTP API instead of opening the database", Scope: Client,
		Field: func(c *Config) any { return &c.Process.Server }},
	{Flag: "token", Env: "PARLEY_TOKEN", Usage: "the credential to send --server (an API token or a JWT; prefer the variable)", Scope: Client,
		Field: func(c *Config) any { return &c.Process.Token }},

	{Flag: "owner", Env: "PARLEY_OWNER", Usage: "act on this owner's conversations (the local owner is the one a server without authentication serves)", Scope: Owner,
		Field: func(c *Config) any { return &c.Process.Owner }},
}

// SettingsOf returns the settings of scope, in order.
func SettingsOf(scope Scope) []Setting {
	var out []Setting
	for _, s := range Settings {
		if s.Scope == scope {
			out = append(out, s)
		}
	}
	return out
}

// Default returns the setting's default as --help shows it: "" when it has none
// (an empty string, an empty list, false).
func (s Setting) Default() string {
	c := Default()
	switch v := s.Field(&c).(type) {
	case *string:
		return *v
	case *bool:
		if !*v {
			return ""
		}
		return strconv.FormatBool(*v)
	case *int:
		return strconv.Itoa(*v)
	case *int64:
		return strconv.FormatInt(*v, 10)
	case *time.Duration:
		return v.String()
	case *[]string:
		return strings.Join(*v, ",")
	}
	panic(fmt.Sprintf("config: setting %s has a field of type %T", s.Flag, s.Field(&c)))
}

// Lookup returns the setting of flag.
func Lookup(flag string) (Setting, bool) {
	i := slices.IndexFunc(Settings, func(s Setting) bool { return s.Flag == flag })
	if i < 0 {
		return Setting{}, false
	}
	return Settings[i], true
}
