package main

import (
	"context"
	"fmt"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"

	"github.com/spf13/cobra"
)

type statusOptions struct {
	json bool
}

func newStatusCommand() *cobra.Command {
	var opts statusOptions
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the daemon, the journal and the open turn",
		Args:  exactArgs(0),
		RunE:  func(cmd *cobra.Command, args []string) error { return runStatus(opts) },
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func runStatus(opts statusOptions) error {
	var st ctl.Status
	err := call(func(ctx context.Context, c *ctl.Client) (err error) {
		st, err = c.Status(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(st)
	}
	fmt.Printf("workspace:   %s\n", st.Workspace)
	if st.Mountpoint != st.Workspace {
		fmt.Printf("mountpoint:  %s\n", st.Mountpoint)
	}
	fmt.Printf("daemon:      pid %d, cowfs %s, since %s\n", st.Pid, st.Version, when(st.StartedAt))
	sync := ""
	if st.Sync {
		sync = ", fsync on every commit"
	}
	fmt.Printf("journal:     %s (%s%s)\n", st.Journal, human.Bytes(st.JournalBytes), sync)
	limit := "no size bound"
	if st.MaxJournalBytes > 0 {
		limit = "at most " + human.Bytes(st.MaxJournalBytes)
	}
	fmt.Printf("space:       %s of content the window needs; %s; %s free\n", human.Bytes(st.ContentBytes), limit, human.Bytes(st.FreeBytes))
	if st.JournalError != "" {
		fmt.Printf("JOURNAL UNUSABLE: %s; changes through the mount fail until cowfs is restarted on a usable journal\n", st.JournalError)
	}
	fmt.Printf("socket:      %s\n", st.Socket)
	if st.Listen != "" {
		fmt.Printf("listen:      %s (mutual TLS)\n", st.Listen)
	}
	if st.FullScan != "" {
		fmt.Printf("rescan:      the last one stat'ed every tracked path: %s\n", st.FullScan)
	}
	if st.Turns == 0 {
		fmt.Printf("turns:       none yet (window %d)\n", st.Window)
	} else {
		fmt.Printf("turns:       %d to %d in the window (keeps %d)\n", st.OldestTurn, st.LatestTurn, st.Window)
	}
	if p := st.PrunedEarly; p != nil {
		fmt.Printf("             %s\n", prunedEarly(p))
	}
	if t := st.OpenTurn; t != nil {
		fmt.Printf("open turn:   %d%s, since %s, %s changed\n", t.Num, idAnchor(t.ID, t.Anchor), when(t.BeganAt), human.Count(t.ChangedPaths, "path", "paths"))
	} else {
		fmt.Printf("open turn:   none\n")
	}
	return nil
}

// idAnchor formats a turn's id and anchor for a human line.
func idAnchor(id, anchor string) string {
	s := ""
	if id != "" {
		s += " id " + human.Shown(id)
	}
	if anchor != "" {
		s += " anchor " + human.Shown(anchor)
	}
	if s != "" {
		s = " (" + s[1:] + ")"
	}
	return s
}

// prunedEarly says in words that turns left the window early.
func prunedEarly(p *ctl.PrunedEarly) string {
	why := map[string]string{
		ctl.PrunedMaxSize:  "the journal reached --max-journal-size",
		ctl.PrunedDiskFull: "the journal's filesystem was full",
	}[p.Reason]
	if why == "" {
		why = p.Reason
	}
	return fmt.Sprintf("turns up to %d left the window early, at %s: %s", p.Through, when(p.Time), why)
}
