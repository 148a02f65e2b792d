package daemon

import (
	"testing"

	"github.com/cowfs/cowfs/human"
)

// A command in a message pastes as it is: words the shell would split
// or expand are single-quoted, a quote in one escaped.
func TestShellCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cowfs", "turn", "end", "-w", "/srv/ws-1/a.b"}, "cowfs turn end -w /srv/ws-1/a.b"},
		{[]string{"cowfs", "-w", "/tmp/my ws"}, "cowfs -w '/tmp/my ws'"},
		{[]string{"-w", "/tmp/it's"}, `-w '/tmp/it'\''s'`},
		{[]string{"-w", "/tmp/$HOME*"}, "-w '/tmp/$HOME*'"},
		{[]string{"-w", ""}, "-w ''"},
	} {
		if got := human.ShellCommand(c.args...); got != c.want {
			t.Errorf("human.ShellCommand(%q) = %s, want %s", c.args, got, c.want)
		}
	}
}
