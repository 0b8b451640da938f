package endpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"strings"
)

// Built-in provider "openai".
const (
	OpenAIProviderID = "openai"
	OpenAIBaseURL    = "https://api.openai.com/v1"
	OpenAIKeyEnv     = "OPENAI_API_KEY"
	OpenAIBaseURLEnv = "OPENAI_BASE_URL"
)

// publicOpenAIHost is the one host where a missing key is certainly a mistake.
const publicOpenAIHost = "api.openai.com"

// Default resolves the built-in "openai" provider from the environment and any
// providers declared in a JSON config file:
//
//	{"providers": {"<id>": {"baseUrl": "...", "apiKeyEnv": "NAME", "apiKey": "...",
//	                        "headers": {...}, "reasoningField": "reasoning_content"}}}
//
// A config entry for "openai" overrides the built-in field by field. The file
// and environment are read on every Resolve, so keys can rotate underneath a
// running process. A key is required when the base URL is the public OpenAI
// API, or when the config names an apiKeyEnv; otherwise (a local Ollama, say)
// the endpoint may have no key.
type Default struct {
	configPath string
	getenv     func(string) string
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
}

type providerConfig struct {
	BaseURL        *string           `json:"baseUrl"`
	APIKeyEnv      *string           `json:"apiKeyEnv"`
	APIKey         *string           `json:"apiKey"`
	Headers        map[string]string `json:"headers"`
	ReasoningField *string           `json:"reasoningField"`
}

// Resolve returns the endpoint for providerID, reading config and env afresh.
func (d *Default) Resolve(providerID string) (Endpoint, error) {
	cfg, err := d.load()
	if err != nil {
		return Endpoint{}, err
	}
	pc, configured := cfg.Providers[providerID]
	if providerID == "" || (!configured && providerID != OpenAIProviderID) {
		return Endpoint{}, &UnknownProviderError{ProviderID: providerID}
	}

	var (
		baseURL, keyEnv, key, reasoning string
		keyEnvDeclared                  bool
		headers                         map[string]string
	)
	if providerID == OpenAIProviderID {
		baseURL = d.getenv(OpenAIBaseURLEnv)
		if baseURL == "" {
			baseURL = OpenAIBaseURL
		}
		keyEnv = OpenAIKeyEnv
	}
	if pc.BaseURL != nil {
		baseURL = *pc.BaseURL
	}
	if pc.APIKeyEnv != nil {
		keyEnv, keyEnvDeclared = *pc.APIKeyEnv, true
	}
	if pc.ReasoningField != nil {
		reasoning = *pc.ReasoningField
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
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL itself is not quoted: it may carry credentials.
		return Endpoint{}, bad("baseUrl must be an absolute http or https URL")
	}
	switch reasoning {
	case ReasoningNone, ReasoningContent, ReasoningPlain:
	default:
		return Endpoint{}, bad(`reasoningField must be "", "reasoning_content" or "reasoning"`)
	}
	if pc.APIKeyEnv != nil && *pc.APIKeyEnv == "" {
		return Endpoint{}, bad("apiKeyEnv is empty")
	}

	if keyEnv != "" {
		key = d.getenv(keyEnv)
	}
	if key == "" && pc.APIKey != nil {
		key = *pc.APIKey
	}
	if key == "" && (keyEnvDeclared || strings.EqualFold(u.Hostname(), publicOpenAIHost)) {
		return Endpoint{}, &MissingKeyError{ProviderID: providerID, EnvVar: keyEnv}
	}
	return Endpoint{
		BaseURL:        strings.TrimRight(baseURL, "/"),
		APIKey:         key,
		Headers:        headers,
		ReasoningField: reasoning,
	}, nil
}

// load reads the config file, or returns an empty config when there is none.
func (d *Default) load() (fileConfig, error) {
	var cfg fileConfig
	if d.configPath == "" {
		return cfg, nil
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
