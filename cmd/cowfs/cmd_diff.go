package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
)

type diffOptions struct {
	step  string
	stat  bool
	json  bool
	color string
}

func newDiffCommand() *cobra.Command {
	var opts diffOptions
	cmd := &cobra.Command{
		Use:   "diff TURN [TO]",
		Short: "Show what a turn changed, as a unified diff",
		Long: `Show what changed from the start of TURN to its end, or to the start of a later
turn TO, or to "now": a unified diff per changed text file; created, deleted
and renamed files as such; binary files and files over 1 MiB named, not
dumped. --step limits it to one step (tool call) of TURN; --stat prints only
files and line counts.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTurnRefs(args...); err != nil {
				return err
			}
			req := ctl.DiffRequest{From: ctl.TurnRef(args[0]), Step: opts.step, Stat: opts.stat}
			if len(args) == 2 {
				req.To = args[1]
			}
			return runDiff(opts, req)
		},
	}
	cmd.Flags().StringVar(&opts.step, "step", "", "only what step `ID` of TURN changed")
	cmd.Flags().BoolVar(&opts.stat, "stat", false, "only files and added/removed line counts")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	cmd.Flags().StringVar(&opts.color, "color", "auto", "color the diff: auto (on a terminal), always or never")
	return cmd
}

func runDiff(opts diffOptions, req ctl.DiffRequest) error {
	var d ctl.Diff
	err := call(func(ctx context.Context, c *ctl.Client) (err error) {
		d, err = c.Diff(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(d)
	}
	color := opts.color == "always" || (opts.color == "auto" && isTerminal(os.Stdout))
	if opts.stat {
		printStat(d)
		return nil
	}
	for _, f := range d.Files {
		switch {
		case f.Diff != "":
			if f.Agent != nil && !*f.Agent {
				fmt.Printf("# %s: changed (in part) by a process that is not the turn's agent\n", shownPath(f.Path))
			}
			fmt.Print(colorDiff(f.Diff, color))
		default:
			fmt.Printf("%s %s%s\n", f.Status, shownPath(f.Path), diffNote(f))
		}
	}
	return nil
}

func diffNote(f ctl.DiffFile) string {
	var notes []string
	if f.From != "" {
		notes = append(notes, "from "+shownPath(f.From))
	}
	switch {
	case f.Binary:
		notes = append(notes, "binary")
	case f.TooLarge:
		notes = append(notes, "over 1 MiB, not shown")
	case f.Note != "":
		notes = append(notes, f.Note)
	}
	if f.Agent != nil && !*f.Agent {
		notes = append(notes, "not the agent's")
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, ", ") + ")"
}

func printStat(d ctl.Diff) {
	width := 0
	for _, f := range d.Files {
		width = max(width, len(shownPath(f.Path)))
	}
	added, removed := 0, 0
	for _, f := range d.Files {
		counts := fmt.Sprintf("%d %s", f.Added+f.Removed, strings.Repeat("+", min(f.Added, 40))+strings.Repeat("-", min(f.Removed, 40)))
		if f.Binary || f.TooLarge || f.Note != "" {
			counts = strings.TrimPrefix(diffNote(f), " ")
		} else if f.Agent != nil && !*f.Agent {
			counts += " (not the agent's)"
		}
		fmt.Printf(" %-*s | %s\n", width, shownPath(f.Path), counts)
		added += f.Added
		removed += f.Removed
	}
	fmt.Printf(" %s changed, %s(+), %s(-)\n", human.Count(len(d.Files), "file", "files"), human.Count(added, "insertion", "insertions"), human.Count(removed, "deletion", "deletions"))
}

// colorDiff colors a unified diff as git does, if asked.
func colorDiff(text string, color bool) string {
	if !color {
		return text
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		c := ""
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			c = "\x1b[1m"
		case strings.HasPrefix(line, "@@"):
			c = "\x1b[36m"
		case strings.HasPrefix(line, "+"):
			c = "\x1b[32m"
		case strings.HasPrefix(line, "-"):
			c = "\x1b[31m"
		}
		if c == "" {
			b.WriteString(line)
			continue
		}
		b.WriteString(c + strings.TrimSuffix(line, "\n") + "\x1b[0m")
		if strings.HasSuffix(line, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
