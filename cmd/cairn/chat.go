package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider/endpoint"
)

type chatOptions struct {
	clientFlags
	session, provider, apiKind, model, instructions, submission string
	tools, links, skills, approve                               []string
	json                                                        bool
	// in answers approval prompts (nil: none are asked)
	in io.Reader
	// interrupt, when set, is told which run Ctrl-C applies to
	interrupt         *chatInterrupt
	file              string // --file: the message's text
	compaction        string
	threshold, target int64
}

func chatCommand() *cobra.Command {
	var o chatOptions
	cmd := &cobra.Command{
		Use:   "chat [flags] MESSAGE... | -",
		Short: "Send a message to a session (a new one unless --session) and follow the run",
		Long: "Send a message to a session (a new one unless --session) and follow the run.\n" +
			"The message is the arguments, or standard input when the one argument is -, or a file's text with --file.",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.in = cmd.InOrStdin()
			message, fromStdin, err := chatMessage(args, o.file, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if fromStdin {
				o.in = nil // read to its end: approvals are decided with `cairn approvals decide`
			}
			if err := o.refuseNewSessionFlags(cmd); err != nil {
				return err
			}
			var in *answers
			if o.in != nil && !o.json {
				in = newAnswers(o.in)
			}
			c := o.client()
			ci, ctx, release := watchInterrupts(cmd.Context(), cmd.OutOrStdout(), in, c)
			defer release()
			o.interrupt = ci
			run, err := runChat(ctx, cmd.OutOrStdout(), c, o, message)
			if ci.left.Load() {
				return nil // the run goes on in the server, as the user chose
			}
			if err != nil {
				return err
			}
			return runEnded(run.session, run.id, run.status)
		},
	}
	o.clientFlags.register(cmd)
	f := cmd.Flags()
	f.StringVar(&o.session, "session", "", "continue this session instead of creating one")
	f.StringVar(&o.provider, "provider", envOr("CAIRN_PROVIDER", "openai"), "provider id for a new session (env CAIRN_PROVIDER)")
	f.StringVar(&o.apiKind, "api", "", "API kind for a new session (default anthropic_messages with --provider anthropic, else chat_completions)")
	f.StringVar(&o.model, "model", envOr("CAIRN_MODEL", "gpt-4o-mini"), "model for a new session (env CAIRN_MODEL)")
	f.StringVar(&o.instructions, "instructions", "", "instructions for a new session")
	f.StringSliceVar(&o.tools, "tool", nil, "grant a tool to a new session (repeatable), e.g. vfs_read_file")
	f.StringSliceVar(&o.approve, "approve", nil, "in a new session, a granted tool whose calls wait for your approval (repeatable); chat asks y/n")
	f.StringArrayVar(&o.links, "link", nil, "mount a workspace or snapshot in a new session: MOUNT=WORKSPACE or MOUNT=sha256:… (repeatable)")
	f.StringSliceVar(&o.skills, "skill", nil, "activate a skill of the linked files for this run only (repeatable)")
	f.StringVar(&o.compaction, "compaction", "", "compaction mode of a new session: disabled, provider_standalone, provider_triggered (openai_responses only)")
	f.Int64Var(&o.threshold, "compaction-threshold", 0, "compact automatically once the conversation's estimated tokens reach this")
	f.Int64Var(&o.target, "compaction-target", 0, "summary length guidance and output budget, in tokens")
	f.StringVar(&o.submission, "submission-id", "", "idempotency key: retrying with the same key and message does not start a second run")
	f.BoolVar(&o.json, "json", false, "print the run's events as JSON lines")
	f.StringVar(&o.file, "file", "", "send this file's text as the message (for a long prompt; no arguments then)")
	return cmd
}

// maxChatMessage bounds a message read from a file or standard input.
const maxChatMessage = 8 << 20

// chatMessage is the message of `cairn chat`: the arguments joined, the
// text of standard input when the one argument is "-", or the file's text
// with --file. A long prompt goes in a file or on standard input: as
// arguments it meets the system's "argument list too long".
func chatMessage(args []string, file string, stdin io.Reader) (message string, fromStdin bool, err error) {
	var data []byte
	switch {
	case file != "" && len(args) > 0:
		return "", false, fmt.Errorf("give the message as arguments or with --file, not both")
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return "", false, err
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, maxChatMessage+1))
		if err != nil {
			return "", false, err
		}
	case len(args) == 1 && args[0] == "-":
		if data, err = io.ReadAll(io.LimitReader(stdin, maxChatMessage+1)); err != nil {
			return "", false, err
		}
		fromStdin = true
	default:
		message = strings.Join(args, " ")
	}
	if len(data) > maxChatMessage {
		return "", false, fmt.Errorf("the message is over %d MiB", maxChatMessage>>20)
	}
	if data != nil {
		message = strings.TrimRight(string(data), "\n")
	}
	if strings.TrimSpace(message) == "" {
		return "", false, fmt.Errorf("no message: give it as arguments, as - to read standard input, or with --file")
	}
	return message, fromStdin, nil
}

// sessionAPIKind is --api, or without it the API kind the provider
// speaks: the built-in anthropic provider speaks only anthropic_messages.
func (o chatOptions) sessionAPIKind() string {
	switch {
	case o.apiKind != "":
		return o.apiKind
	case o.provider == endpoint.AnthropicProviderID:
		return core.APIAnthropicMessages
	}
	return core.APIChatCompletions
}

// runChat creates the session if needed, starts a run and follows it.
// chatRun is the run a chat started and how it ended.
type chatRun struct{ session, id, status string }

func runChat(ctx context.Context, out io.Writer, c *api.Client, o chatOptions, message string) (chatRun, error) {
	session := o.session
	if session == "" {
		links, err := parseLinks(o.links)
		if err != nil {
			return chatRun{}, err
		}
		created, err := c.CreateSession(ctx, api.CreateSessionParams{
			Model:        core.ModelSelection{ProviderID: o.provider, APIKind: o.sessionAPIKind(), Model: o.model},
			Instructions: o.instructions,
			Tools:        o.tools,
			Approvals:    approvals(o.approve),
			Links:        links,
			Compaction:   o.compactionPolicy(),
		})
		if err != nil {
			return chatRun{}, err
		}
		session = created.SessionID
		if !o.json {
			fmt.Fprintf(out, "session %s (continue it with --session %s)\n", session, session)
		}
	}
	before, err := c.ReadSession(ctx, session)
	if err != nil {
		return chatRun{}, err
	}
	run, err := c.StartRun(ctx, api.RunStartParams{SessionID: session, Input: []api.InputPart{{Type: "text", Text: message}}, SubmissionID: o.submission, Skills: o.skills})
	if err != nil {
		return chatRun{}, err
	}
	f := &follower{client: c, out: out, json: o.json, session: session}
	switch {
	case o.interrupt != nil:
		f.in = o.interrupt.in // one reader for both questions
		o.interrupt.following(session, run.RunID)
	case o.in != nil && !o.json:
		f.in = newAnswers(o.in)
	}
	if !o.json {
		fmt.Fprintf(out, "run %s %s\n", run.RunID, run.Status)
	}
	status, err := f.follow(ctx, run.RunID, before.Head)
	return chatRun{session: session, id: run.RunID, status: status}, err
}

// approvals is the approval policy of the tools named by --approve.
func approvals(tools []string) map[string]string {
	if len(tools) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, t := range tools {
		out[t] = core.ApprovalAlways
	}
	return out
}

// parseLinks reads --link values: MOUNT=WORKSPACE, or MOUNT=sha256:… for a
// pinned snapshot.
func parseLinks(specs []string) ([]api.LinkParam, error) {
	var out []api.LinkParam
	for _, s := range specs {
		mount, target, ok := strings.Cut(s, "=")
		if !ok || mount == "" || target == "" {
			return nil, fmt.Errorf("--link %q: want MOUNT=WORKSPACE or MOUNT=sha256:<hex>", s)
		}
		l := api.LinkParam{Mount: mount, Workspace: target}
		if strings.HasPrefix(target, "sha256:") {
			d, err := content.ParseDigest(target)
			if err != nil {
				return nil, fmt.Errorf("--link %q: %w", s, err)
			}
			snap := api.DigestRef(d)
			l = api.LinkParam{Mount: mount, Snapshot: &snap}
		}
		out = append(out, l)
	}
	return out, nil
}

// compactionPolicy is the policy the compaction flags describe; nil when
// none was given.
func (o chatOptions) compactionPolicy() *core.Compaction {
	if o.compaction == "" && o.threshold == 0 && o.target == 0 {
		return nil
	}
	mode := o.compaction
	if mode == "" {
		mode = core.CompactionProviderStandalone
	}
	return &core.Compaction{Mode: mode, ThresholdTokens: o.threshold, TargetTokens: o.target}
}

// newSessionFlags configure the session chat creates; a session continued
// with --session keeps its own configuration.
var newSessionFlags = []string{"provider", "api", "model", "instructions", "tool", "approve", "link", "compaction", "compaction-threshold", "compaction-target"}

// refuseNewSessionFlags refuses a new session's flags beside --session,
// where they would be ignored without a word.
func (o chatOptions) refuseNewSessionFlags(cmd *cobra.Command) error {
	if o.session == "" {
		return nil
	}
	var given []string
	for _, name := range newSessionFlags {
		if cmd.Flags().Changed(name) {
			given = append(given, "--"+name)
		}
	}
	if len(given) == 0 {
		return nil
	}
	verb, them := "configure", "them"
	if len(given) == 1 {
		verb, them = "configures", "it"
	}
	return fmt.Errorf("%s %s a new session; --session %s continues one with its own configuration: drop %s, change the session with cairn session update, or start a new session without --session",
		strings.Join(given, ", "), verb, o.session, them)
}
