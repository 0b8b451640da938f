package anthropic

import "encoding/json"

// ValidateParams checks a session's provider parameters for this API kind.
func (a *Adapter) ValidateParams(raw json.RawMessage) error { return ValidateParams(raw) }
