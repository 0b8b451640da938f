package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// configFlags are the configuration changes session update, fork and clone
// take; only the flags given change anything.
type configFlags struct {
	provider, model, instructions, params, compaction string
	tools                                             []string
	threshold, target                                 int64
}

func (f *configFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "", "the model (same API kind as the session)")
	fl.StringVar(&f.provider, "provider", "", "the provider id (with --model; default: the session's)")
	fl.StringSliceVar(&f.tools, "tool", nil, "the granted tools, replacing the session's (repeatable; --tool '' grants none)")
	fl.StringVar(&f.instructions, "instructions", "", "replace the main instructions")
	fl.StringVar(&f.params, "provider-params", "", `the provider parameters as JSON, e.g. '{"version":1,"stream":false}'; null removes them`)
	fl.StringVar(&f.compaction, "compaction", "", "compaction mode: disabled, provider_standalone, provider_triggered")
	fl.Int64Var(&f.threshold, "compaction-threshold", 0, "with --compaction: compact automatically at this many estimated tokens")
	fl.Int64Var(&f.target, "compaction-target", 0, "with --compaction: summary length guidance, in tokens")
}

// changes are the flags given, as session/update's params; current is the
// session's model, for a --provider or --model given alone.
func (f *configFlags) changes(cmd *cobra.Command, current core.ModelSelection) (api.SessionUpdateParams, error) {
	var p api.SessionUpdateParams
	changed := cmd.Flags().Changed
	if changed("model") || changed("provider") {
		m := current
		if changed("model") {
			m.Model = f.model
		}
		if changed("provider") {
			m.ProviderID = f.provider
		}
		p.Model = &m
	}
	if changed("tool") {
		tools := []string{}
		for _, t := range f.tools {
			if t != "" {
				tools = append(tools, t)
			}
		}
		p.Tools = &tools
	}
	if changed("instructions") {
		p.Instructions = &f.instructions
	}
	if changed("provider-params") {
		if !json.Valid([]byte(f.params)) {
			return p, fmt.Errorf("--provider-params is not JSON")
		}
		p.ProviderParams = json.RawMessage(f.params)
	}
	if changed("compaction") {
		p.Compaction = &core.Compaction{Mode: f.compaction, ThresholdTokens: f.threshold, TargetTokens: f.target}
	} else if changed("compaction-threshold") || changed("compaction-target") {
		return p, fmt.Errorf("--compaction-threshold and --compaction-target go with --compaction MODE")
	}
	return p, nil
}

// needsModel reports whether changes needs the session's current model.
func (f *configFlags) needsModel(cmd *cobra.Command) bool {
	return cmd.Flags().Changed("model") != cmd.Flags().Changed("provider")
}

func sessionUpdateCommand() *cobra.Command {
	var cf clientFlags
	var f configFlags
	var expected int64
	cmd := &cobra.Command{
		Use:   "update SESSION [--model M] [--tool T]... [--instructions TEXT] [--provider-params JSON] [--compaction MODE]",
		Short: "Change a session's model, tools, instructions, provider parameters or compaction for its next runs",
		Long: "Change a session's model, tools, instructions, provider parameters or compaction for its next runs:\n" +
			"at once when it is idle, else when its active run ends (before a queued run starts).\n" +
			"The change is one config event with its own revision (session/read's configRevision); --expected-revision\n" +
			"applies it only to that revision. The API kind of a session is fixed: a model of another kind needs a new session.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := changesFor(cmd, &cf, &f, args[0])
			if err != nil {
				return err
			}
			p.SessionID = args[0]
			if cmd.Flags().Changed("expected-revision") {
				p.ExpectedRevision = &expected
			}
			res, err := cf.client().UpdateSession(cmd.Context(), p)
			if err != nil {
				return err
			}
			when := ""
			if res.Pending {
				when = " (applies when the active run ends)"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "session %s: configuration revision %d%s\n", res.SessionID, res.ConfigRevision, when)
			return err
		},
	}
	cf.register(cmd)
	f.register(cmd)
	cmd.Flags().Int64Var(&expected, "expected-revision", 0, "refuse unless the configuration is at this revision")
	return cmd
}
