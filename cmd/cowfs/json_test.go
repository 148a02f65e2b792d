package main

import (
	"testing"

	"github.com/spf13/cobra"
)

// protocolCommands (and their subcommands) speak a protocol on standard
// output already, for a program, not a person: --json would mean nothing.
var protocolCommands = map[string]bool{
	"cowfs mcp":  true, // JSON-RPC (MCP) on stdio
	"cowfs hook": true, // an agent CLI's hook replies
}

// Every command takes --json, as the README says: a script never has to
// parse the text a person reads.
func TestEveryCommandTakesJSON(t *testing.T) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			if protocolCommands[sub.CommandPath()] {
				continue
			}
			if sub.Runnable() && sub.Flags().Lookup("json") == nil {
				t.Errorf("%s has no --json", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk(newRootCommand())
}
