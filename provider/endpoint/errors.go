package endpoint

import (
	"errors"
	"fmt"
)

// ErrUnknownProvider is matched by *UnknownProviderError.
var ErrUnknownProvider = errors.New("unknown provider")

// UnknownProviderError: no built-in or configured provider has this id.
type UnknownProviderError struct{ ProviderID string }

func (e *UnknownProviderError) Error() string {
	return fmt.Sprintf("endpoint: unknown provider %q (configure it under \"providers\" in the endpoint config file)", e.ProviderID)
}
func (e *UnknownProviderError) Unwrap() error { return ErrUnknownProvider }

// ErrMissingKey is matched by *MissingKeyError.
var ErrMissingKey = errors.New("missing API key")

// MissingKeyError: the provider needs a key and none is available. It names
// the environment variable to set (empty when the config names none), never a value.
type MissingKeyError struct {
	ProviderID string
	EnvVar     string
}

func (e *MissingKeyError) Error() string {
	if e.EnvVar == "" {
		return fmt.Sprintf("endpoint: provider %q needs an API key: set \"apiKeyEnv\" for it in the endpoint config file", e.ProviderID)
	}
	return fmt.Sprintf("endpoint: provider %q needs an API key: set the environment variable %s", e.ProviderID, e.EnvVar)
}
func (e *MissingKeyError) Unwrap() error { return ErrMissingKey }

// ErrConfig is matched by *ConfigError.
var ErrConfig = errors.New("invalid endpoint config")

// ConfigError: the config file cannot be read or says something invalid.
// Reason never quotes file contents, which may hold literal keys.
type ConfigError struct {
	Path       string
	ProviderID string // empty when the error is about the file as a whole
	Reason     string
	Err        error // underlying I/O or syntax error, if any
}

func (e *ConfigError) Error() string {
	msg := "endpoint: config " + e.Path
	if e.ProviderID != "" {
		msg += fmt.Sprintf(": provider %q", e.ProviderID)
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes both ErrConfig and the underlying error (e.g. fs.ErrNotExist).
func (e *ConfigError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrConfig}
	}
	return []error{ErrConfig, e.Err}
}
