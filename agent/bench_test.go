package agent

import (
	"os"
	"testing"

	"github.com/cowfs/cowfs/journal"
)

// What deciding whose a change is costs, per change, once the process
// is known: the FUSE layer asks once for every change made during a
// turn that has a scope.

func BenchmarkAgentUid(b *testing.B) {
	tr := NewTracker(nil)
	defer tr.Close()
	s := &journal.Scope{Uids: []uint32{1000}}
	for b.Loop() {
		tr.Agent(s, uint32(os.Getpid()), 1000)
	}
}

func BenchmarkAgentPid(b *testing.B) {
	tr := NewTracker(nil)
	defer tr.Close()
	s, err := tr.Resolve(Spec{Pids: []uint32{uint32(os.Getppid())}})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		tr.Agent(s, uint32(os.Getpid()), 1000)
	}
}

func BenchmarkAgentCgroup(b *testing.B) {
	tr := NewTracker(nil)
	defer tr.Close()
	s, err := tr.Resolve(Spec{Cgroups: []string{"/"}})
	if err != nil {
		b.Skip(err)
	}
	for b.Loop() {
		tr.Agent(s, uint32(os.Getpid()), 1000)
	}
}
