package anthropic

import (
	"strings"
	"testing"
)

// BenchmarkRequestBody writes the request of a context that carries 100
// tool results of 256 KiB (the re-read scenario of issue 17) with short
// messages between them: in parts, as the adapter sends it, and joined.
func BenchmarkRequestBody(b *testing.B) {
	file := textBlock(strings.Repeat(strings.Repeat("x", 63)+"\n", 4096))
	var conv conversation
	for range 100 {
		conv.messages = append(conv.messages,
			message{role: roleUser, blocks: []block{textBlock("Read the file again.")}},
			message{role: roleAssistant, blocks: []block{textBlock("Reading.")}},
			message{role: roleUser, blocks: []block{file}})
	}
	conv.messages = append(conv.messages, message{role: roleAssistant, blocks: []block{textBlock("Done.")}},
		message{role: roleUser, blocks: []block{textBlock("Thanks.")}})
	b.Run("parts", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := conv.bodyParts("m", params{}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("joined", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := conv.body("m", params{}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
