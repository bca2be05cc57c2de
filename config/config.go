// Package config owns Parley's configuration: the file's keys, their defaults, the
// checks that name a bad key, and the declaration of every setting a flag or an
// environment variable can give (Settings), from which cmd/parley makes its flags and
// the README's table is checked. Flags win over variables, and both over the file.
// Sections are independent, so new ones slot in beside the others.
package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/parley-dev/parley"
)

// Config is the whole configuration file.
type Config struct {
	Workspace  Workspace                                `yaml:"workspace"`
	Agents     map[parley.AgentRole][]parley.Permission `yaml:"agents"`
	Tools      Tools                                    `yaml:"tools"`
	MCP        MCP                                      `yaml:"mcp"`
	Vision     Vision                                   `yaml:"vision"`
	OCR        OCR                                      `yaml:"ocr"`
	Fetch      Fetch                                    `yaml:"fetch"`
	Auth       Auth                                     `yaml:"auth"`
	Limits     Limits                                   `yaml:"limits"`
	RateLimits RateLimits                               `yaml:"rate_limits"`
	HTTP       HTTP                                     `yaml:"http"`
	Render     Render                                   `yaml:"render"`
	Search     Search                                   `yaml:"search"`
	// Process is what only flags and the environment set: it is not in the file.
	Process Process `yaml:"-"`
}

// Process holds the settings of the running process that the configuration file does
// not have: where it listens, its database, its logs.
type Process struct {
	// ConfigFile is the configuration file read (empty: none).
	ConfigFile string
	// Addr is where serve listens (HOST:PORT).
	Addr string
	// ShutdownTimeout bounds how long requests in flight may finish on shutdown.
	ShutdownTimeout time.Duration
	// RequestTimeout bounds one query or mutation (0: no limit).
	RequestTimeout time.Duration
	// ReadTimeout bounds reading one request, body included; IdleTimeout closes a
	// keep-alive connection without requests; MaxConnections bounds the connections
	// open at once (see server.Connections).
	ReadTimeout, IdleTimeout time.Duration
	MaxConnections           int
	// MetricsAddr serves /metrics apart from the API; "" on Addr, "off" nowhere.
	MetricsAddr string
	// DebugAddr serves Go's profiles and runtime counters; "" nowhere.
	DebugAddr string
	// DatabaseURL is a PostgreSQL URL; "" runs the embedded Postgres in DataDir.
	DatabaseURL string
	// DataDir is the embedded Postgres's directory; "" the user's data directory.
	DataDir string
	// LogLevel and LogFormat shape the logs (debug, info, warn, error; text, json).
	LogLevel, LogFormat string
	// Owner is whose conversations import and export act on.
	Owner string
	// Server is the base URL of a running Parley that import, export and
	// conversations talk to over its HTTP API instead of opening the database; Token is
	// the credential they send it.
	Server, Token string
	// IOUring lets serve send websocket deliveries in batches through Linux's io_uring
	// where the kernel allows it; false sends each with a system call of its own.
	IOUring bool
}

// Workspace is where file references and image files are read from.
type Workspace struct {
	// Root is the directory that file paths resolve against and must stay inside;
	// "" refuses every file.
	Root string `yaml:"root"`
	// MaxFileBytes is the size above which a resolved file's content is truncated.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
}

// Tools holds the tool approval policies.
type Tools struct {
	// Default is the policy of a tool no rule names (REQUIRE_APPROVAL).
	Default parley.ToolPolicy `yaml:"default"`
	// Policies maps a tool name or a glob pattern to its policy.
	Policies map[string]parley.ToolPolicy `yaml:"policies"`
}

// MCP lists the MCP servers resources are read from.
type MCP struct {
	Servers map[string]MCPServer `yaml:"servers"`
	// MaxResourceBytes is the size above which a resource's text is truncated.
	MaxResourceBytes int `yaml:"max_resource_bytes"`
}

// Render is how messages' html fields are rendered.
type Render struct {
	// ImageHosts are host patterns ("images.example.com", "*.example.com", "*" for
	// all) that images in message text may load from by themselves; images elsewhere
	// are rendered as links. None by default: an image in model output that loads by
	// itself can carry data out to whoever chose its URL.
	ImageHosts []string `yaml:"image_hosts"`
}

// Search is how messages are searched.
type Search struct {
	// Config is the Postgres text search configuration of the stored vectors and of
	// every query (DefaultSearchConfig): simple keeps every word as written, lowercased;
	// english stems and drops stop words. Changing it rebuilds every message's vector
	// when the server starts.
	Config string `yaml:"config"`
}

// MCPServer is one MCP server: a command speaking stdio, or a streamable HTTP URL.
type MCPServer struct {
	// Command is the program and its arguments.
	Command []string `yaml:"command"`
	// Env adds variables to the command's environment.
	Env map[string]string `yaml:"env"`
	// URL is a streamable HTTP endpoint.
	URL string `yaml:"url"`
	// Headers are sent with every HTTP request (an Authorization header, say).
	Headers map[string]string `yaml:"headers"`
	// TTL is how long a resource read from this server stays fresh (1h).
	TTL Duration `yaml:"ttl"`
	// Timeout bounds connecting and one read (30s).
	Timeout Duration `yaml:"timeout"`
}

// Vision is the OpenAI-compatible chat completions endpoint used to see images.
type Vision struct {
	// URL is the API's base URL (https://api.openai.com/v1); "" disables vision.
	URL    string `yaml:"url"`
	Model  string `yaml:"model"`
	APIKey string `yaml:"api_key"`
	// Models says which models see images, by name or glob pattern; it is laid over a
	// built-in table of well-known models.
	Models map[string]bool `yaml:"models"`
	// Timeout bounds one request (60s).
	Timeout Duration `yaml:"timeout"`
	// MaxTokens bounds the answer (1024).
	MaxTokens int `yaml:"max_tokens"`
	// Detail is the image detail asked for: auto, low or high (auto).
	Detail string `yaml:"detail"`
}

// OCR configures Tesseract.
type OCR struct {
	// Command is the tesseract binary (found on PATH by default).
	Command string `yaml:"command"`
	// Languages are Tesseract language codes joined by "+" (eng).
	Languages string `yaml:"languages"`
	// Timeout bounds one recognition (60s).
	Timeout Duration `yaml:"timeout"`
}

// Fetch bounds downloading images given by URL.
type Fetch struct {
	MaxBytes int64    `yaml:"max_bytes"`
	Timeout  Duration `yaml:"timeout"`
	// AllowNetworks are private or loopback networks (CIDR) that may be fetched from;
	// all others of those kinds are refused.
	AllowNetworks []string `yaml:"allow_networks"`
}

// Duration is a time.Duration written as "90s", "1h".
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil || v < 0 {
		// Validate reports it, naming the key: the decoder's error would not.
		*d = badDuration
		return nil
	}
	*d = Duration(v)
	return nil
}

// badDuration marks a value that is not a duration.
const badDuration = Duration(-1)

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Defaults.
const (
	DefaultAddr             = "127.0.0.1:8080"
	DefaultShutdownTimeout  = 20 * time.Second
	DefaultRequestTimeout   = 3 * time.Minute
	DefaultReadTimeout      = time.Minute
	DefaultIdleTimeout      = time.Minute
	DefaultMaxConnections   = 10000
	DefaultMaxFileBytes     = 1 << 20
	DefaultMaxResourceBytes = 1 << 20
	DefaultMCPTTL           = time.Hour
	DefaultMCPTimeout       = 30 * time.Second
	DefaultVisionTimeout    = 60 * time.Second
	DefaultVisionMaxTokens  = 1024
	DefaultOCRTimeout       = 60 * time.Second
	DefaultFetchMaxBytes    = 20 << 20
	DefaultFetchTimeout     = 30 * time.Second
	DefaultSearchConfig     = "simple"
)

// Default returns the configuration without a file, flags or environment.
func Default() Config {
	c := Config{}
	c.applyDefaults()
	return c
}

// defaultProcess is Process's defaults. The file cannot set Process, so these are set
// whole, not key by key: a zero RequestTimeout given by a flag means "no limit".
func defaultProcess() Process {
	return Process{Addr: DefaultAddr, ShutdownTimeout: DefaultShutdownTimeout, RequestTimeout: DefaultRequestTimeout,
		ReadTimeout: DefaultReadTimeout, IdleTimeout: DefaultIdleTimeout, MaxConnections: DefaultMaxConnections,
		LogLevel: "info", LogFormat: "text", Owner: parley.LocalOwner, IOUring: true}
}

// Load reads the YAML (or JSON) file at path, fills in defaults and validates it. Its
// errors name the file and the offending key.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if c.Workspace.Root != "" && !filepath.IsAbs(c.Workspace.Root) {
		// A relative root is relative to the file, not to wherever Parley was started.
		c.Workspace.Root = filepath.Join(filepath.Dir(path), c.Workspace.Root)
	}
	return c, nil
}

// Parse decodes a configuration, fills in defaults and validates it. Unknown keys are
// errors, so that a misspelt key is not silently ignored.
func Parse(b []byte) (Config, error) {
	var c Config
	if err := yaml.UnmarshalWithOptions(b, &c, yaml.DisallowUnknownField()); err != nil {
		return Config{}, errors.New(yaml.FormatError(err, false, true))
	}
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func (c *Config) applyDefaults() {
	if c.Process == (Process{}) {
		c.Process = defaultProcess()
	}
	if c.Search.Config == "" {
		c.Search.Config = DefaultSearchConfig
	}
	if c.Workspace.MaxFileBytes == 0 {
		c.Workspace.MaxFileBytes = DefaultMaxFileBytes
	}
	if c.Agents == nil {
		c.Agents = map[parley.AgentRole][]parley.Permission{}
		for r, p := range parley.DefaultAgentPermissions {
			c.Agents[r] = slices.Clone(p)
		}
	}
	if c.Tools.Default == "" {
		c.Tools.Default = parley.PolicyRequireApproval
	}
	if c.MCP.MaxResourceBytes == 0 {
		c.MCP.MaxResourceBytes = DefaultMaxResourceBytes
	}
	for name, s := range c.MCP.Servers {
		if s.TTL == 0 {
			s.TTL = Duration(DefaultMCPTTL)
		}
		if s.Timeout == 0 {
			s.Timeout = Duration(DefaultMCPTimeout)
		}
		c.MCP.Servers[name] = s
	}
	if c.Vision.Timeout == 0 {
		c.Vision.Timeout = Duration(DefaultVisionTimeout)
	}
	if c.Vision.MaxTokens == 0 {
		c.Vision.MaxTokens = DefaultVisionMaxTokens
	}
	if c.Vision.Detail == "" {
		c.Vision.Detail = "auto"
	}
	if c.OCR.Command == "" {
		c.OCR.Command = "tesseract"
	}
	if c.OCR.Languages == "" {
		c.OCR.Languages = "eng"
	}
	if c.OCR.Timeout == 0 {
		c.OCR.Timeout = Duration(DefaultOCRTimeout)
	}
	if c.Fetch.MaxBytes == 0 {
		c.Fetch.MaxBytes = DefaultFetchMaxBytes
	}
	if c.Fetch.Timeout == 0 {
		c.Fetch.Timeout = Duration(DefaultFetchTimeout)
	}
	c.Limits.applyDefaults()
	c.RateLimits.applyDefaults()
	c.Auth.applyDefaults()
	if c.HTTP.Introspection == nil {
		on := true
		c.HTTP.Introspection = &on
	}
}

// Validate checks every key and names the first bad one.
func (c *Config) Validate() error {
	if c.Workspace.MaxFileBytes < 0 {
		return keyError("workspace.max_file_bytes", "must be positive")
	}
	agents := make(map[parley.AgentRole][]parley.Permission, len(c.Agents))
	for name, perms := range c.Agents {
		role := parley.AgentRole(strings.ToUpper(string(name)))
		agents[role] = perms
		if !slices.Contains(parley.AgentRoles, role) {
			return keyError("agents."+string(role), "is not an agent role; use PLANNER, EXECUTOR or REVIEWER")
		}
		for i, p := range perms {
			if !slices.Contains(parley.Permissions, p) {
				return keyError(fmt.Sprintf("agents.%s[%d]", role, i), fmt.Sprintf("%q is not a permission; use read_files, recognize_images or read_resources", p))
			}
		}
	}
	c.Agents = agents
	var err error
	if c.Tools.Default, err = parley.ParseToolPolicy(string(c.Tools.Default)); err != nil {
		return keyError("tools.default", parley.ErrorMessage(err))
	}
	for name, pol := range c.Tools.Policies {
		key := fmt.Sprintf("tools.policies.%q", name)
		if c.Tools.Policies[name], err = parley.ParseToolPolicy(string(pol)); err != nil {
			return keyError(key, parley.ErrorMessage(err))
		}
		if _, err := path.Match(name, ""); err != nil {
			return keyError(key, "is not a valid name or glob pattern")
		}
	}
	if c.MCP.MaxResourceBytes < 0 {
		return keyError("mcp.max_resource_bytes", "must be positive")
	}
	for name, s := range c.MCP.Servers {
		key := "mcp.servers." + name
		if strings.TrimSpace(name) == "" {
			return keyError("mcp.servers", "a server name is empty")
		}
		switch {
		case len(s.Command) > 0 && s.URL != "":
			return keyError(key, "give command or url, not both")
		case len(s.Command) == 0 && s.URL == "":
			return keyError(key, "give command (a stdio server) or url (a streamable HTTP server)")
		case s.URL != "":
			if err := checkHTTPURL(s.URL); err != nil {
				return keyError(key+".url", err.Error())
			}
		case strings.TrimSpace(s.Command[0]) == "":
			return keyError(key+".command", "the program is empty")
		}
		if len(s.Headers) > 0 && s.URL == "" {
			return keyError(key+".headers", "only an HTTP server (url) takes headers")
		}
		if len(s.Env) > 0 && len(s.Command) == 0 {
			return keyError(key+".env", "only a command server takes env")
		}
		if s.TTL < 0 {
			return keyError(key+".ttl", durationHint)
		}
		if s.Timeout < 0 {
			return keyError(key+".timeout", durationHint)
		}
	}
	if c.Vision.URL != "" {
		if err := checkHTTPURL(c.Vision.URL); err != nil {
			return keyError("vision.url", err.Error())
		}
		if c.Vision.Model == "" {
			return keyError("vision.model", "is required with vision.url")
		}
	}
	for pattern := range c.Vision.Models {
		if _, err := path.Match(pattern, ""); err != nil {
			return keyError(fmt.Sprintf("vision.models.%q", pattern), "is not a valid name or glob pattern")
		}
	}
	if !slices.Contains([]string{"auto", "low", "high"}, c.Vision.Detail) {
		return keyError("vision.detail", fmt.Sprintf("%q is not auto, low or high", c.Vision.Detail))
	}
	if c.Vision.MaxTokens < 0 {
		return keyError("vision.max_tokens", "must be positive")
	}
	for key, d := range map[string]Duration{"vision.timeout": c.Vision.Timeout, "ocr.timeout": c.OCR.Timeout, "fetch.timeout": c.Fetch.Timeout} {
		if d < 0 {
			return keyError(key, durationHint)
		}
	}
	if c.Fetch.MaxBytes < 0 {
		return keyError("fetch.max_bytes", "must be positive")
	}
	for i, n := range c.Fetch.AllowNetworks {
		if _, err := ParseNetwork(n); err != nil {
			return keyError(fmt.Sprintf("fetch.allow_networks[%d]", i), fmt.Sprintf("%q is not a CIDR network or an IP address", n))
		}
	}
	return c.validateAuthAndLimits()
}

// ParseNetwork reads a CIDR network or a single address.
func ParseNetwork(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ToolPolicies returns the tool policy table.
func (c *Config) ToolPolicies() parley.ToolPolicies {
	return parley.ToolPolicies{Default: c.Tools.Default, Rules: c.Tools.Policies}
}

// AgentPermissions returns the agent permission table.
func (c *Config) AgentPermissions() parley.AgentPermissions {
	return parley.AgentPermissions(c.Agents)
}

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

const durationHint = "must be a duration like 90s, 10m or 1h"

func keyError(key, msg string) error { return fmt.Errorf("%s: %s", key, msg) }
