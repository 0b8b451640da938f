package endpoint

import "github.com/cairn-agents/cairn/core"

// Built-in provider "openai".
const (
	OpenAIProviderID = "openai"
	OpenAIBaseURL    = "https://api.openai.com/v1"
	OpenAIKeyEnv     = "OPENAI_API_KEY"
	OpenAIBaseURLEnv = "OPENAI_BASE_URL"
)

// Built-in provider "anthropic". The base URL has no /v1: the Anthropic
// adapter appends /v1/messages, as Anthropic's own SDKs do with
// ANTHROPIC_BASE_URL.
const (
	AnthropicProviderID = "anthropic"
	AnthropicBaseURL    = "https://api.anthropic.com"
	AnthropicKeyEnv     = "ANTHROPIC_API_KEY"
	AnthropicBaseURLEnv = "ANTHROPIC_BASE_URL"
)

// builtin is a provider that exists without a config record. A record with
// its id overrides it field by field.
type builtin struct {
	baseURL    string
	baseURLEnv string
	keyEnv     string
	apiKinds   []string
}

var builtins = map[string]builtin{
	OpenAIProviderID: {
		baseURL: OpenAIBaseURL, baseURLEnv: OpenAIBaseURLEnv, keyEnv: OpenAIKeyEnv,
		apiKinds: []string{core.APIChatCompletions, core.APIOpenAIResponses},
	},
	AnthropicProviderID: {
		baseURL: AnthropicBaseURL, baseURLEnv: AnthropicBaseURLEnv, keyEnv: AnthropicKeyEnv,
		apiKinds: []string{core.APIAnthropicMessages},
	},
}

// publicHosts are the hosts where a missing key is certainly a mistake,
// whichever provider record points at them.
var publicHosts = []string{"api.openai.com", "api.anthropic.com"}
