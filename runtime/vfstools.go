package runtime

import (
	"context"
	"encoding/json"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/vfs"
)

// VFSTools returns the model-facing vfs_* tools, in their advertised order.
// A session gets them by granting their names in its config; they work on
// the files its links mount.
func VFSTools() []Tool {
	defs := vfs.ToolDefs()
	out := make([]Tool, len(defs))
	for i, d := range defs {
		out[i] = vfsTool{d}
	}
	return out
}

type vfsTool struct{ def vfs.ToolDef }

func (t vfsTool) Definition() provider.Tool {
	return provider.Tool{Name: t.def.Name, Description: t.def.Description, Parameters: t.def.Parameters}
}

func (t vfsTool) Invoke(ctx context.Context, env ToolEnv, args json.RawMessage) (ToolOutput, error) {
	if env.Files == nil {
		return ToolOutput{Content: []byte("this session links no files: create it with links to a workspace or snapshot"), IsError: true}, nil
	}
	res, err := vfs.CallTool(ctx, env.Files, t.def.Name, args)
	if err != nil {
		return ToolOutput{}, err
	}
	return ToolOutput{Content: []byte(res.Text), IsError: res.IsError}, nil
}
