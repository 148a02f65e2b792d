package human

import "testing"

func TestHuman(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Count(1, "path", "paths"), "1 path"},
		{Count(0, "path", "paths"), "0 paths"},
		{Bytes(512), "512 B"},
		{Bytes(1536), "1.5 KiB"},
		{Bytes(3 << 20), "3.0 MiB"},
		{Shown("a b"), "a b"},
		{Shown("a\x1b[2Jb"), `"a\x1b[2Jb"`},
		{Shown("\xff"), `"\xff"`},
		{ShellWord("/usr/bin/cowfs"), "/usr/bin/cowfs"},
		{ShellWord("my ws"), "'my ws'"},
		{ShellWord("it's"), `'it'\''s'`},
		{ShellWord(""), "''"},
		{ShellCommand("cowfs", "-w", "/a b"), "cowfs -w '/a b'"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
