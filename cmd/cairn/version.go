package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildInfo is what this binary knows of its build: the module version
// (a tag when installed with `go install …@version`, "(devel)" from a
// checkout), the commit it was built from, and the Go that built it.
type buildInfo struct {
	Version, Commit, Go string
	Modified            bool // built from a tree with uncommitted changes
}

func readBuildInfo() buildInfo {
	out := buildInfo{Version: "(unknown)", Commit: "(unknown)", Go: "(unknown)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	out.Version, out.Go = bi.Main.Version, bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			out.Commit = s.Value
		case "vcs.modified":
			out.Modified = s.Value == "true"
		}
	}
	return out
}

func (b buildInfo) String() string {
	commit := b.Commit
	if b.Modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("%s, commit %s, %s", b.Version, commit, b.Go)
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := readBuildInfo()
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "cairn %s\ncommit %s\ngo %s\n", b.Version, b.Commit, b.Go)
			if err == nil && b.Modified {
				_, err = fmt.Fprintln(cmd.OutOrStdout(), "built from a tree with uncommitted changes")
			}
			return err
		},
	}
}
