package core

import "github.com/cairn-agents/cairn/content"

// The well-known constant blobs. Their bytes never change (their digests
// are pinned by a test); every host stores them before driving a session, so
// events may reference them without any executor having written them.
var (
	ToolUnavailableBytes = []byte(`{"error":"tool_unavailable","message":"This tool is not available in this session."}`)
	ToolFailedBytes      = []byte(`{"error":"tool_failed","message":"The tool failed at the runtime boundary and produced no result."}`)
	ModelFailedBytes     = []byte(`{"error":"model_call_failed","message":"The model call failed at the runtime boundary."}`)
	ToolCancelledBytes   = []byte(`{"error":"tool_cancelled","message":"The tool call was cancelled before it produced a result."}`)
	ToolTimedOutBytes    = []byte(`{"error":"tool_timed_out","message":"The client did not answer this tool call in time."}`)
)

var (
	ToolUnavailableRef = constantRef(ToolUnavailableBytes)
	ToolFailedRef      = constantRef(ToolFailedBytes)
	ModelFailedRef     = constantRef(ModelFailedBytes)
	ToolCancelledRef   = constantRef(ToolCancelledBytes)
	ToolTimedOutRef    = constantRef(ToolTimedOutBytes)
)

// ConstantBlobs returns the bytes of every constant blob, in a fixed order.
func ConstantBlobs() [][]byte {
	return [][]byte{ToolUnavailableBytes, ToolFailedBytes, ModelFailedBytes, ToolCancelledBytes, ToolTimedOutBytes}
}

func constantRef(b []byte) content.ContentRef {
	return content.ContentRef{Digest: content.Sum(b), MediaType: content.MediaJSON}
}

// ContentRefBytes pairs a constant blob's ref with its bytes.
type ContentRefBytes struct {
	Ref   content.ContentRef
	Bytes []byte
}
