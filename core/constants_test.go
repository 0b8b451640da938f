package core_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// The digests of the constant blobs are part of the storage format:
// events written today reference them, so their bytes must never change.
func TestSpec_ConstantBlobDigestsArePinned(t *testing.T) {
	pins := []struct {
		name  string
		ref   content.ContentRef
		bytes []byte
		want  string
	}{
		{"tool unavailable", core.ToolUnavailableRef, core.ToolUnavailableBytes, "sha256:43d99d00703cb96f1cb11858da5359e8c5b1e7e29967614c2e4014eed2591359"},
		{"tool failed", core.ToolFailedRef, core.ToolFailedBytes, "sha256:b419d8938880868b2877a7e76b66fbcf666b99d94a67f8e7a10143b058d433dd"},
		{"model failed", core.ModelFailedRef, core.ModelFailedBytes, "sha256:ff55d88f2e596f8bc0d69a050a014299a998029ba7b9d2fad2646158d440c43e"},
		{"tool cancelled", core.ToolCancelledRef, core.ToolCancelledBytes, "sha256:1f24ae9d37a58d9c37a43951549381080ee6342b2424c6bd2c1d9a9ef77f0891"},
		{"tool timed out", core.ToolTimedOutRef, core.ToolTimedOutBytes, "sha256:d66f614bce715b2e47139254f5738dcb5dd3b92e6ec9bb2c3d829a6d008b2361"},
	}
	blobs := core.ConstantBlobs()
	if len(blobs) != len(pins) {
		t.Fatalf("%d constant blobs, want %d", len(blobs), len(pins))
	}
	for i, p := range pins {
		if got := p.ref.Digest.String(); got != p.want {
			t.Errorf("%s ref digest %s, pinned %s", p.name, got, p.want)
		}
		if got := content.Sum(p.bytes).String(); got != p.want {
			t.Errorf("%s bytes hash to %s, pinned %s", p.name, got, p.want)
		}
		if !bytes.Equal(blobs[i], p.bytes) {
			t.Errorf("ConstantBlobs()[%d] is not the %s blob", i, p.name)
		}
		if p.ref.MediaType != content.MediaJSON || p.ref.ProviderKind != "" || p.ref.Validate() != nil {
			t.Errorf("%s ref %+v", p.name, p.ref)
		}
		var v map[string]string
		if err := json.Unmarshal(p.bytes, &v); err != nil || v["error"] == "" || v["message"] == "" {
			t.Errorf("%s blob is not an error document: %v", p.name, err)
		}
		canon, err := content.Canonical(p.bytes)
		if err != nil || !bytes.Equal(canon, p.bytes) {
			t.Errorf("%s blob is not canonical JSON", p.name)
		}
	}
}
