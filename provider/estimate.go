package provider

import (
	"unicode/utf8"

	"github.com/cairn-agents/cairn/core"
)

// Estimate approximates the tokens of bytes sent to a model. It counts one
// token per four bytes of UTF-8, rounded up, plus a small per-entry overhead
// for role and framing. For English prose and JSON this lands within about
// ±30% of real BPE tokenizers (cl100k/o200k); for CJK text it underestimates
// (about one token per character). It is a heuristic, and says so.
func Estimate(data []byte) core.TokenEstimate {
	const perEntryOverhead = 4
	return core.TokenEstimate{Tokens: int64((len(data)+3)/4) + perEntryOverhead, Quality: core.EstimateHeuristic}
}

// Preview returns at most core.MaxPreviewBytes of text, cut on a rune
// boundary, with an ellipsis when cut. It is display-only.
func Preview(text string) string {
	if len(text) <= core.MaxPreviewBytes {
		return text
	}
	cut := core.MaxPreviewBytes - len("…")
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}
