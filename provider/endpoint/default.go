package endpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"time"
)

// Default resolves the built-in providers "openai" (OPENAI_API_KEY,
// OPENAI_BASE_URL) and "anthropic" (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)
// from the environment, and any providers declared in a JSON config file:
//
//	{"providers": {"<id>": {"baseUrl": "...", "apiKeyEnv": "NAME", "apiKey": "...",
//	                        "headers": {...}, "reasoningField": "reasoning_content", "stream": false,
//	                        "contextWindow": 32768,
//	                        "apiKinds": ["chat_completions", "openai_responses", "anthropic_messages"]}}}
//
// A config entry for a built-in id overrides it field by field. The
// environment is read on every Resolve, and the file again whenever its size
// or modification time changed, so keys can rotate underneath a running
// process.
//
// Rules, each enforced with a typed error:
//   - A custom provider has exactly what its record says: no base URL, key or
//     API kind is borrowed from a built-in, so it never silently falls back
//     to OpenAI. Without "apiKinds" it admits chat_completions only.
//   - baseUrl is https, or plain http on a loopback host only
//     (*InsecureBaseURLError otherwise).
//   - headers are non-secret; credential headers (Authorization, x-api-key,
//     …) are refused, secrets come only from apiKeyEnv or apiKey.
//   - A key is required when the base URL is a public provider API
//     (api.openai.com, api.anthropic.com) or the record names an apiKeyEnv
//     and its host is not loopback; otherwise (a local Ollama, say) the
//     endpoint may have no key.
type Default struct {
	configPath string
	getenv     func(string) string

	// The parsed file, kept while its size and modification time stay as
	// they were: every request and every run's admission resolves its
	// provider, and a stat costs less than reading and parsing the file.
	// Resolve only reads it.
	mu     sync.Mutex
	cached *fileConfig
	stamp  fileStamp
}

// fileStamp is what tells a changed config file from the one parsed.
type fileStamp struct {
	size    int64
	modTime time.Time
}

var _ Resolver = (*Default)(nil)

// New returns the default resolver. configPath "" means no config file;
// getenv nil means os.Getenv.
func New(configPath string, getenv func(string) string) *Default {
	if getenv == nil {
		getenv = os.Getenv
	}
	return &Default{configPath: configPath, getenv: getenv}
}

// fileConfig is the config file's shape. Pointers tell "absent" from "empty"
// so an override can set exactly the fields it names.
type fileConfig struct {
	Providers map[string]providerConfig `json:"providers"`
	// MCPServers are read by package mcptools, with its own rules.
	MCPServers json.RawMessage `json:"mcpServers"`
}

type providerConfig struct {
	BaseURL        *string           `json:"baseUrl"`
	APIKeyEnv      *string           `json:"apiKeyEnv"`
	APIKey         *string           `json:"apiKey"`
	Headers        map[string]string `json:"headers"`
	ReasoningField *string           `json:"reasoningField"`
	Stream         *bool             `json:"stream"`
	APIKinds       *[]string         `json:"apiKinds"`
	ContextWindow  *int64            `json:"contextWindow"`
}

// ResolveFor resolves providerID for apiKind; see the package function.
func (d *Default) ResolveFor(providerID, apiKind string) (Endpoint, error) {
	return ResolveFor(d, providerID, apiKind)
}

// Resolve returns the endpoint for providerID, from the config file as it
// is now and the environment.
// It does not check API kinds; adapters use ResolveFor.
func (d *Default) Resolve(providerID string) (Endpoint, error) {
	cfg, err := d.load()
	if err != nil {
		return Endpoint{}, err
	}
	pc, configured := cfg.Providers[providerID]
	bi, isBuiltin := builtins[providerID]
	if providerID == "" || (!configured && !isBuiltin) {
		return Endpoint{}, &UnknownProviderError{ProviderID: providerID}
	}

	var (
		baseURL, keyEnv, key, reasoning string
		keyEnvDeclared                  bool
		headers                         map[string]string
		kinds                           = defaultCustomAPIKinds
		urlSource                       = "config file " + d.configPath
	)
	if isBuiltin {
		baseURL, kinds = bi.baseURL, bi.apiKinds
		urlSource = "built-in default"
		if v := d.getenv(bi.baseURLEnv); v != "" {
			baseURL, urlSource = v, "environment variable "+bi.baseURLEnv
		}
		keyEnv = bi.keyEnv
	}
	if pc.BaseURL != nil {
		baseURL, urlSource = *pc.BaseURL, "config file "+d.configPath
	}
	if pc.APIKeyEnv != nil {
		keyEnv, keyEnvDeclared = *pc.APIKeyEnv, true
	}
	if pc.ReasoningField != nil {
		reasoning = *pc.ReasoningField
	}
	if pc.APIKinds != nil {
		kinds = *pc.APIKinds
	}
	if len(pc.Headers) > 0 {
		headers = make(map[string]string, len(pc.Headers))
		for k, v := range pc.Headers {
			headers[k] = v
		}
	}

	bad := func(reason string) error {
		return &ConfigError{Path: d.configPath, ProviderID: providerID, Reason: reason}
	}
	if baseURL == "" {
		return Endpoint{}, bad("baseUrl is required")
	}
	u, err := checkBaseURL(providerID, baseURL, urlSource, bad)
	if err != nil {
		return Endpoint{}, err
	}
	switch reasoning {
	case ReasoningNone, ReasoningContent, ReasoningPlain:
	default:
		return Endpoint{}, bad(`reasoningField must be "", "reasoning_content" or "reasoning"`)
	}
	if pc.APIKeyEnv != nil && *pc.APIKeyEnv == "" {
		return Endpoint{}, bad("apiKeyEnv is empty")
	}
	if len(kinds) == 0 {
		return Endpoint{}, bad("apiKinds is empty; list the API kinds the provider speaks")
	}
	for _, k := range kinds {
		if !isKnownAPIKind(k) {
			return Endpoint{}, bad("apiKinds: unknown API kind (want " + strings.Join(knownAPIKinds, ", ") + ")")
		}
	}
	if reason := CheckHeaders(headers); reason != "" {
		return Endpoint{}, bad(reason)
	}
	var window int64
	if pc.ContextWindow != nil {
		if window = *pc.ContextWindow; window <= 0 {
			return Endpoint{}, bad("contextWindow must be a positive number of tokens")
		}
	}

	if keyEnv != "" {
		key = d.getenv(keyEnv)
	}
	if key == "" && pc.APIKey != nil {
		key = *pc.APIKey
	}
	// A declared apiKeyEnv left unset is a mistake, except on a loopback
	// server (a local Ollama), which needs no key: there it is optional.
	if key == "" && (keyEnvDeclared && !IsLoopback(u.Hostname()) || isPublicHost(u.Hostname())) {
		return Endpoint{}, &MissingKeyError{ProviderID: providerID, EnvVar: keyEnv, APIKinds: append([]string(nil), kinds...)}
	}
	return Endpoint{
		BaseURL:        strings.TrimRight(baseURL, "/"),
		APIKey:         key,
		Headers:        headers,
		ReasoningField: reasoning,
		Stream:         pc.Stream == nil || *pc.Stream, // streams unless the record says it cannot
		APIKinds:       append([]string(nil), kinds...),
		ContextWindow:  window,
	}, nil
}

func isPublicHost(host string) bool {
	for _, h := range publicHosts {
		if strings.EqualFold(host, h) {
			return true
		}
	}
	return false
}

// load reads the config file, or returns an empty config when there is none.
func (d *Default) load() (fileConfig, error) {
	var cfg fileConfig
	if d.configPath == "" {
		return cfg, nil
	}
	info, err := os.Stat(d.configPath)
	if err != nil {
		return cfg, &ConfigError{Path: d.configPath, Reason: "cannot read", Err: unwrapPath(err)}
	}
	stamp := fileStamp{size: info.Size(), modTime: info.ModTime()}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cached != nil && d.stamp == stamp {
		return *d.cached, nil
	}
	data, err := os.ReadFile(d.configPath)
	if err != nil {
		return cfg, &ConfigError{Path: d.configPath, Reason: "cannot read", Err: unwrapPath(err)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	// Unknown fields are rejected so a misspelt "apiKeyEnv" fails loudly
	// instead of silently sending requests without a key.
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, &ConfigError{Path: d.configPath, Reason: "invalid JSON", Err: err}
	}
	if dec.More() {
		return cfg, &ConfigError{Path: d.configPath, Reason: "invalid JSON: trailing data after the object"}
	}
	d.cached, d.stamp = &cfg, stamp
	return cfg, nil
}

// unwrapPath drops *fs.PathError's repetition of the path we already print.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
