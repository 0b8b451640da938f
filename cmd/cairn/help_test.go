package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every flag's help names its value in one word (HOST:PORT, string, …):
// a word in backquotes in a usage line becomes the value's name, and a
// quoted command there once showed as "--temporal cairn worker".
func TestFlagValueNamesAreOneWord(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " \t") {
				t.Errorf("%s --%s: its value shows as %q", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(rootCommand())
	out := &strings.Builder{}
	root := rootCommand()
	root.SetOut(out)
	root.SetArgs([]string{"serve", "--help"})
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), "--temporal HOST:PORT") {
		t.Fatalf("serve --help: %v\n%s", err, out.String())
	}
}
