"""Socket discovery agrees with the daemon's own idea of its socket, for
awkward workspace names, from inside the workspace and through a symlink;
a path with no daemon gets NoDaemonError."""

import json
import os
import shutil
import tempfile
import unittest

from cowfs import Client, NoDaemonError, find_workspace, locate, socket_for, state_root
from cowfs.testing import TestWorkspace
from support import SKIP


class TestStateRoot(unittest.TestCase):
    def test_prefers_state_dir_then_root_then_xdg(self):
        self.assertEqual(state_root({"COWFS_STATE_DIR": "/s", "XDG_STATE_HOME": "/x"}), "/s")
        if os.getuid() == 0:
            self.assertEqual(state_root({"XDG_STATE_HOME": "/x"}), "/var/lib/cowfs")
        else:
            self.assertEqual(state_root({"XDG_STATE_HOME": "/x"}), "/x/cowfs")

    def test_socket_dir(self):
        loc = locate("/tmp", {"COWFS_STATE_DIR": "/s", "COWFS_SOCKET_DIR": "/run/cowfs"})
        self.assertEqual(loc.socket, os.path.join("/run/cowfs", os.path.basename(loc.dir) + ".sock"))

    def test_too_deep_for_a_socket_path(self):
        with self.assertRaisesRegex(ValueError, "too deep for a Unix socket path"):
            locate("/tmp/w", {"COWFS_STATE_DIR": "/" + "d" * 100})

    def test_empty_path_names_no_workspace(self):
        with self.assertRaisesRegex(ValueError, "empty path"):
            locate("", {"COWFS_STATE_DIR": "/s"})

    def test_names_as_the_daemon_makes_them(self):
        env = {"COWFS_STATE_DIR": "/s"}
        self.assertRegex(locate("/", env).dir, r"^/s/_-[0-9a-f]{12}$")
        self.assertRegex(locate("/tmp/my ws!ü+é (copy)", env).dir, r"^/s/my_ws_copy_-[0-9a-f]{12}$")
        self.assertRegex(locate("/tmp/" + "x" * 40, env).dir, r"^/s/x{32}-[0-9a-f]{12}$")
        raw = b"/tmp/caf\xe9"  # a name that is not UTF-8
        self.assertRegex(locate(os.fsdecode(raw), env).dir, r"^/s/caf_-[0-9a-f]{12}$")


@unittest.skipIf(SKIP, SKIP or "")
class TestDiscovery(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workspaces = []
        for name in ["ws", "my ws!ü+é (copy)", "a-very-long-workspace-name-that-goes-past-32-bytes.d"]:
            w = TestWorkspace.create(name=name, seed={"sub/deeper/f": "x"})
            cls.addClassCleanup(lambda w=w: _clean(w))
            cls.workspaces.append(w)

    def test_finds_the_socket_the_daemon_listens_on(self):
        for w in self.workspaces:
            self.assertEqual(socket_for(w.dir, w.env), w.socket, w.dir)
            loc = locate(w.dir, w.env)
            self.assertEqual(loc.workspace, w.dir)
            self.assertEqual(os.path.dirname(loc.socket), loc.dir)

    def test_from_a_path_inside_as_the_cli_does(self):
        w = self.workspaces[0]
        inner = w.path("sub/deeper")
        loc = find_workspace(inner, w.env)
        self.assertEqual((loc.workspace, loc.socket), (w.dir, w.socket))
        cli = json.loads(w.cowfs("-w", inner, "status", "--json"))
        self.assertEqual(cli["socket"], loc.socket)
        # A path that does not exist yet, inside the workspace, too.
        self.assertEqual(socket_for(w.path("sub/not-yet"), w.env), w.socket)

    def test_client_from_the_environment(self):
        w = self.workspaces[1]
        saved = os.environ.get("COWFS_STATE_DIR")
        os.environ["COWFS_STATE_DIR"] = w.state
        try:
            c = Client(workspace=w.path("sub"))
            self.assertEqual(c.socket, w.socket)
            self.assertEqual(c.status().workspace, w.dir)
            cwd = os.getcwd()
            os.chdir(w.path("sub/deeper"))
            try:
                self.assertEqual(Client().socket, w.socket)
            finally:
                os.chdir(cwd)
        finally:
            if saved is None:
                del os.environ["COWFS_STATE_DIR"]
            else:
                os.environ["COWFS_STATE_DIR"] = saved

    def test_resolves_symlinks_first(self):
        w = self.workspaces[0]
        link = os.path.join(w.root, "link")
        os.symlink(w.dir, link)
        self.assertEqual(socket_for(link, w.env), w.socket)

    def test_socket_dir_as_the_daemon_uses_it(self):
        sockets = tempfile.mkdtemp(prefix="cowfs-py-sockets-")
        self.addCleanup(shutil.rmtree, sockets, True)
        w = TestWorkspace.create(env={"COWFS_SOCKET_DIR": sockets})
        self.addCleanup(lambda: self.assertEqual(w.cleanup(), []))
        self.assertEqual(os.path.dirname(w.socket), sockets)
        self.assertEqual(socket_for(w.path(""), w.env), w.socket)
        self.assertEqual(Client(socket=socket_for(w.dir, w.env)).status().workspace, w.dir)

    def test_no_daemon_outside_every_workspace(self):
        w = self.workspaces[0]
        outside = os.path.join(w.root, "elsewhere")
        os.mkdir(outside)
        loc = find_workspace(outside, w.env)
        self.assertEqual(loc.workspace, outside)
        with self.assertRaises(NoDaemonError) as cm:
            Client(socket=loc.socket).status()
        self.assertEqual((cm.exception.code, cm.exception.socket), ("no_daemon", loc.socket))


def _clean(w: TestWorkspace) -> None:
    forced = w.cleanup()
    if forced:
        raise AssertionError(forced)


if __name__ == "__main__":
    unittest.main()
