package endpoint

import (
	"errors"
	"fmt"
	"strings"
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
	// APIKinds are the kinds the provider admits, known without its key.
	APIKinds []string
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
	if e.Path == "" {
		// Built-in providers are configured by environment alone.
		msg = "endpoint: configuration"
	}
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

// ErrAPIKindNotAdmitted is matched by *APIKindError.
var ErrAPIKindNotAdmitted = errors.New("API kind not admitted by provider")

// APIKindError: the provider exists but does not admit the requested API
// kind. It also matches ErrConfig, because the fix is a configuration change
// (add the kind to the provider's "apiKinds", or pick another provider).
type APIKindError struct {
	ProviderID string
	APIKind    string
	Admitted   []string
}

func (e *APIKindError) Error() string {
	return fmt.Sprintf("endpoint: provider %q does not admit API kind %q (it admits %s; list the kinds it speaks under \"apiKinds\" in the endpoint config file)",
		e.ProviderID, e.APIKind, strings.Join(e.Admitted, ", "))
}

// Unwrap exposes ErrAPIKindNotAdmitted and ErrConfig.
func (e *APIKindError) Unwrap() []error { return []error{ErrAPIKindNotAdmitted, ErrConfig} }

// ErrInsecureBaseURL is matched by *InsecureBaseURLError.
var ErrInsecureBaseURL = errors.New("plain http base URL on a non-loopback host")

// InsecureBaseURLError: a base URL uses plain http on a host that is not
// loopback, where the key and the conversation would cross the network in
// the clear. It names the host (never the whole URL, which may carry
// credentials) and where the URL came from; it also matches ErrConfig.
type InsecureBaseURLError struct {
	ProviderID string
	Host       string
	Source     string // "config file <path>" or "environment variable <NAME>"
}

func (e *InsecureBaseURLError) Error() string {
	return fmt.Sprintf("endpoint: provider %q: base URL from %s uses plain http on %q; use https, or http only on localhost, 127.0.0.0/8 or ::1",
		e.ProviderID, e.Source, e.Host)
}

// Unwrap exposes ErrInsecureBaseURL and ErrConfig.
func (e *InsecureBaseURLError) Unwrap() []error { return []error{ErrInsecureBaseURL, ErrConfig} }
