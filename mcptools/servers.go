package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime"
)

// DefaultTimeout bounds a call of a server without timeoutMs.
const DefaultTimeout = 60 * time.Second

// connectTimeout bounds connecting to a server (starting a command, the
// HTTP handshake).
const connectTimeout = 15 * time.Second

// Servers are the configured MCP servers, each connected when first used
// and kept; a connection that fails is dropped and made again on the next
// use.
type Servers struct {
	configs   map[string]ServerConfig
	getenv    func(string) string
	transport http.RoundTripper
	logger    *slog.Logger
	client    *mcp.Client

	mu    sync.Mutex
	conns map[string]*conn
}

var _ runtime.MCPServers = (*Servers)(nil)

type conn struct {
	mu      sync.Mutex // one connect at a time
	session *mcp.ClientSession
}

// Options are how Servers reach their servers; every field may be zero.
type Options struct {
	Getenv    func(string) string // os.Getenv when nil
	Transport http.RoundTripper   // a clone of http.DefaultTransport when nil (see New)
	Logger    *slog.Logger        // slog.Default() when nil
	Version   string              // Cairn's version, told to servers
}

// New returns the servers of configs (see LoadConfig).
func New(configs map[string]ServerConfig, opt Options) *Servers {
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	if opt.Transport == nil {
		// net/http's default keeps two idle connections a host; the tool
		// calls of every session go to the same few servers, and more than
		// two at once would each open a connection.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = t.MaxIdleConns
		opt.Transport = t
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	return &Servers{configs: configs, getenv: opt.Getenv, transport: opt.Transport, logger: opt.Logger,
		client: mcp.NewClient(&mcp.Implementation{Name: "cairn", Version: opt.Version}, nil), conns: map[string]*conn{}}
}

// Names are the configured servers' names, sorted.
func (s *Servers) Names() []string { return slices.Sorted(maps.Keys(s.configs)) }

// UnknownServerError is a server the config file does not name.
type UnknownServerError struct{ Server string }

func (e *UnknownServerError) Error() string {
	return fmt.Sprintf("no MCP server %q is configured (mcpServers of the server's config file)", e.Server)
}

// MissingKeyError is a server whose apiKeyEnv names an unset variable.
type MissingKeyError struct{ Server, EnvVar string }

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("MCP server %q: environment variable %s (its apiKeyEnv) is not set", e.Server, e.EnvVar)
}

// redacted is an error whose text had a server's key taken out: a server
// may echo the key back in an error, which is logged.
type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// redact removes server's key from err's text.
func (s *Servers) redact(server string, err error) error {
	if err == nil {
		return nil
	}
	env := s.configs[server].APIKeyEnv
	if env == "" {
		return err
	}
	key := s.getenv(env)
	if key == "" {
		return err
	}
	if msg := endpoint.RedactSecret(err.Error(), key); msg != err.Error() {
		return &redacted{msg: msg, err: err}
	}
	return err
}

// ListTools implements runtime.MCPServers.
func (s *Servers) ListTools(ctx context.Context, server string) ([]runtime.MCPToolDefinition, error) {
	tools, err := s.listTools(ctx, server)
	return tools, s.redact(server, err)
}

func (s *Servers) listTools(ctx context.Context, server string) ([]runtime.MCPToolDefinition, error) {
	cs, err := s.session(ctx, server)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout(server))
	defer cancel()
	var out []runtime.MCPToolDefinition
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			s.drop(server, cs)
			return nil, fmt.Errorf("MCP server %q: listing tools: %w", server, err)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || string(schema) == "null" {
			schema = nil
		}
		out = append(out, runtime.MCPToolDefinition{Server: server, Name: t.Name, Description: t.Description, Parameters: schema})
	}
	return out, nil
}

// CallTool implements runtime.MCPServers: the call is bounded by the
// server's timeoutMs.
func (s *Servers) CallTool(ctx context.Context, server, tool string, args json.RawMessage) (runtime.ToolOutput, error) {
	out, err := s.callTool(ctx, server, tool, args)
	return out, s.redact(server, err)
}

func (s *Servers) callTool(ctx context.Context, server, tool string, args json.RawMessage) (runtime.ToolOutput, error) {
	cs, err := s.session(ctx, server)
	if err != nil {
		return runtime.ToolOutput{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout(server))
	defer cancel()
	params := &mcp.CallToolParams{Name: tool}
	if len(args) > 0 {
		params.Arguments = args
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
		}
		s.drop(server, cs)
		return runtime.ToolOutput{}, fmt.Errorf("MCP server %q: calling %q: %w", server, tool, err)
	}
	return toolOutput(res), nil
}

// Close ends every connection (a command server's program exits).
func (s *Servers) Close() {
	s.mu.Lock()
	conns := s.conns
	s.conns = map[string]*conn{}
	s.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		if c.session != nil {
			_ = c.session.Close()
			c.session = nil
		}
		c.mu.Unlock()
	}
}

func (s *Servers) timeout(server string) time.Duration {
	if ms := s.configs[server].TimeoutMs; ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return DefaultTimeout
}

// session returns the server's connection, connecting first if needed.
func (s *Servers) session(ctx context.Context, server string) (*mcp.ClientSession, error) {
	cfg, ok := s.configs[server]
	if !ok {
		return nil, &UnknownServerError{Server: server}
	}
	s.mu.Lock()
	c := s.conns[server]
	if c == nil {
		c = &conn{}
		s.conns[server] = c
	}
	s.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != nil {
		return c.session, nil
	}
	t, err := s.transportFor(server, cfg)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	cs, err := s.client.Connect(cctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: connecting: %w", server, err)
	}
	c.session = cs
	return cs, nil
}

// drop forgets a connection that failed, so the next use connects again.
func (s *Servers) drop(server string, cs *mcp.ClientSession) {
	s.mu.Lock()
	c := s.conns[server]
	s.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session == cs {
		_ = cs.Close()
		c.session = nil
	}
}

func (s *Servers) transportFor(server string, cfg ServerConfig) (mcp.Transport, error) {
	if len(cfg.Command) > 0 {
		// Not tied to a request's context: the program outlives the call
		// that started it.
		cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
		cmd.Env = s.commandEnv(cfg)
		cmd.Stderr = logWriter{s.logger.With("mcp_server", server)}
		return &mcp.CommandTransport{Command: cmd}, nil
	}
	if cfg.APIKeyEnv != "" && s.getenv(cfg.APIKeyEnv) == "" {
		return nil, &MissingKeyError{Server: server, EnvVar: cfg.APIKeyEnv}
	}
	return &mcp.StreamableClientTransport{
		Endpoint: cfg.URL,
		HTTPClient: &http.Client{Transport: credentialTransport{base: s.transport, server: server, headers: cfg.Headers,
			keyEnv: cfg.APIKeyEnv, getenv: s.getenv}},
		DisableStandaloneSSE: true, // only answers to Cairn's own requests are needed
	}, nil
}

// commandEnv is a command server's environment: PATH and HOME, and its
// configured env with "${NAME}" values read from Cairn's.
func (s *Servers) commandEnv(cfg ServerConfig) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME"} {
		if v := s.getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		v := cfg.Env[k]
		if strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") {
			v = s.getenv(v[2 : len(v)-1])
		}
		env = append(env, k+"="+v)
	}
	return env
}

// credentialTransport adds a server's headers, and its key read from the
// environment just before each request (never kept), to every request.
type credentialTransport struct {
	base    http.RoundTripper
	server  string
	headers map[string]string
	keyEnv  string
	getenv  func(string) string
}

func (t credentialTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	if t.keyEnv != "" {
		key := t.getenv(t.keyEnv)
		if key == "" {
			return nil, &MissingKeyError{Server: t.server, EnvVar: t.keyEnv}
		}
		r.Header.Set("Authorization", "Bearer "+key)
	}
	return t.base.RoundTrip(r)
}

// logWriter logs a command server's standard error, line by line.
type logWriter struct{ logger *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.logger.Info("MCP server stderr", "line", line)
	}
	return len(p), nil
}
