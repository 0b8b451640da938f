package runtime

// GenerationDelta is a piece of a generation's streamed answer, as clients
// see it: never stored, gone once the generation's result is admitted.
type GenerationDelta struct {
	RunID string `json:"runId"`
	Turn  int    `json:"turn"`
	Kind  string `json:"kind"` // text, reasoning or tool_arguments
	Text  string `json:"text"`
}
