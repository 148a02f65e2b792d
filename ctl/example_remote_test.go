package ctl_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cowfs/cowfs/ctl"
)

// A harness on another machine: the daemon runs with
// cowfs mount --listen https://10.0.0.5:8443 --tls-dir /etc/cowfs/tls,
// and the harness holds a certificate its ca.pem signed.
func ExampleDialRemote() {
	c, err := ctl.DialRemote("https://10.0.0.5:8443", "/etc/harness/tls")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.BeginTurn(ctx, ctl.BeginTurnRequest{ID: "prompt-1"}); err != nil {
		log.Fatal(err)
	}
	// … the agent works …
	t, err := c.EndTurn(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("turn %d changed %d paths\n", t.Num, t.ChangedPaths)
}

// Following the events across daemon restarts and broken connections,
// from the last seq the harness stored.
func ExampleClient_Follow() {
	c, err := ctl.DialRemote("https://10.0.0.5:8443", "/etc/harness/tls")
	if err != nil {
		log.Fatal(err)
	}
	var last uint64 // e.g. read back from the harness's own storage
	err = c.Follow(context.Background(), last, ctl.FollowOptions{}, func(e ctl.Event) error {
		fmt.Println(e.Seq, e.Type, e.Path)
		return nil // store e.Seq to resume from after a restart
	})
	if err != nil {
		log.Fatal(err)
	}
}
