"""Every endpoint of docs/api.md through Client, against a real daemon on a
real mount, and every typed error."""

import os
import unittest

import cowfs
from cowfs import (
    BadRequestError,
    BusyError,
    Client,
    ConflictError,
    CowfsError,
    NoDaemonError,
    NotFoundError,
    OutOfWindowError,
    path_bytes,
    path_query,
    path_string,
)
from cowfs.errors import api_error
from support import FuseCase, workspace


def read(p: str) -> str:
    with open(p, encoding="utf-8") as f:
        return f.read()


class ErrorCheck(unittest.TestCase):
    def raises(self, cls, code, fn, *args, status=None, **kwargs) -> CowfsError:
        with self.assertRaises(cls) as cm:
            fn(*args, **kwargs)
        e = cm.exception
        self.assertIsInstance(e, CowfsError)
        self.assertEqual(e.code, code)
        self.assertTrue(e.message)
        if status is not None:
            self.assertEqual(e.status, status)
        return e


class TestClient(FuseCase, ErrorCheck):
    """The methods in the order a harness uses them (unittest runs them by name)."""

    @classmethod
    def setUpClass(cls):
        cls.w = workspace(cls, seed={"main.go": "one\ntwo\nthree\n", "old.txt": "old\n"})
        cls.c = cls.w.client()

    def test_1_status(self):
        st = self.c.status()
        self.assertIsInstance(st, cowfs.Status)
        self.assertEqual(st.workspace, self.w.dir)
        self.assertEqual(st.mountpoint, self.w.dir)
        self.assertEqual(st.socket, self.w.socket)
        self.assertEqual(st.window, 10)
        self.assertEqual(st.turns, 0)
        self.assertIsNone(st.open_turn)
        self.assertEqual(st.unrevertable, 0)
        self.assertIsInstance(st.pid, int)
        self.assertIsInstance(st.resources, cowfs.Resources)

    def test_2_turns(self):
        t = self.c.begin_turn(id="turn-1", anchor="msg-1")
        self.assertEqual((t.num, t.id, t.anchor, t.state), (1, "turn-1", "msg-1", "open"))
        self.assertEqual(self.c.status().open_turn.num, 1)
        self.raises(BusyError, "busy", self.c.begin_turn, status=409)

        self.assertEqual(self.c.begin_step("call_a"), cowfs.StepStarted(turn=1, id="call_a"))
        self.w.sh("sed -i s/two/TWO/ main.go")
        self.c.begin_step("call_b")
        self.w.sh("mkdir -p build && echo x > build/out && mv old.txt new.txt")

        ended = self.c.end_turn()
        self.assertEqual(ended.state, "closed")
        self.assertEqual(ended.changed_paths, 4)
        self.assertTrue(ended.ended_at)

        lst = self.c.turns()
        self.assertEqual(len(lst.turns), 1)
        self.assertEqual(lst.outside_turns, 0)

        d = self.c.turn("turn-1")
        self.assertEqual(d.num, 1)
        self.assertEqual(
            [(x.path, x.kind, x.from_, x.step, x.command) for x in d.changes],
            [
                ("build", "created", None, "call_b", "mkdir"),
                ("build/out", "created", None, "call_b", "sh"),
                ("main.go", "modified", None, "call_a", "sed"),
                ("new.txt", "renamed", "old.txt", "call_b", "mv"),
            ],
        )
        self.assertEqual(self.c.turn(1), d)
        self.assertEqual([x.path for x in self.c.turn(1, step="call_a").changes], ["main.go"])

    def test_3_diff(self):
        d = self.c.diff("turn-1")
        self.assertEqual((d.from_, d.to), ("turn 1", "end of turn 1"))
        main = next(f for f in d.files if f.path == "main.go")
        self.assertEqual(main.status, "modified")
        self.assertEqual(main.diff, "--- a/main.go\n+++ b/main.go\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n")
        renamed = next(f for f in d.files if f.path == "new.txt")
        self.assertEqual(renamed.to_wire(), {"path": "new.txt", "from": "old.txt", "status": "renamed", "added": 0, "removed": 0})

        self.assertEqual([f.path for f in self.c.diff(1, step="call_a").files], ["main.go"])

        stat = self.c.diff(1, to="now", stat=True)
        self.assertEqual(stat.to, "now")
        self.assertTrue(all(f.diff is None for f in stat.files))
        self.assertEqual(next(f for f in stat.files if f.path == "main.go").added, 1)

    def test_4_content(self):
        self.assertEqual(self.c.content(1, "main.go"), b"one\ntwo\nthree\n")
        self.assertEqual(self.c.cat("turn-1", "old.txt"), b"old\n")
        self.raises(NotFoundError, "not_found", self.c.content, 1, "build/out", status=404)
        self.raises(BadRequestError, "bad_request", self.c.content, 1, "../../etc/passwd", status=400)

    def test_5_rollback_markers_unrevert(self):
        plan = self.c.rollback_preview("turn-1")
        self.assertTrue(plan.dry_run)
        self.assertIsNone(plan.marker)
        self.assertIsNone(plan.rollback)
        self.assertEqual(read(self.w.path("main.go")), "one\nTWO\nthree\n")
        self.assertEqual(
            [(p.path, p.action, p.type, p.from_, p.to) for p in plan.paths],
            [
                ("build", "delete", "dir", None, None),
                ("build/out", "delete", "file", None, None),
                ("main.go", "restore", "file", None, None),
                ("new.txt", "delete", "file", None, "old.txt"),
                ("old.txt", "recover", "file", "new.txt", None),
            ],
        )
        self.assertEqual(self.c.rollback("turn-1", dry_run=True), plan)

        res = self.c.rollback(1)
        self.assertIs(res.complete, True)
        self.assertIsNone(res.failure)
        self.assertEqual((res.target, res.rollback), (1, 1))
        self.assertEqual(res.counts, cowfs.RollbackCounts(restored=1, recovered=1, deleted=1, skipped=0,
                                                          dirs_removed=1, dirs_recreated=0))
        self.assertEqual((res.marker.anchor, res.marker.id), ("msg-1", "turn-1"))
        self.assertLessEqual(len(res.marker.note), 160)
        self.assertEqual(read(self.w.path("main.go")), "one\ntwo\nthree\n")
        self.assertEqual(read(self.w.path("old.txt")), "old\n")
        self.assertFalse(os.path.exists(self.w.path("build")))

        self.assertEqual(self.c.status().unrevertable, 1)
        self.assertEqual(self.c.turns().turns[0].state, "reverted")
        self.assertEqual(self.c.markers().markers, [res.marker])

        un = self.c.unrevert()
        self.assertTrue(un.unrevert)
        self.assertIsNone(un.marker)
        self.assertEqual(read(self.w.path("main.go")), "one\nTWO\nthree\n")
        self.assertEqual(read(self.w.path("build/out")), "x\n")
        self.assertEqual(self.c.markers().markers, [])
        self.raises(ConflictError, "conflict", self.c.unrevert, force=False, status=409)

    def test_6_undo(self):
        res = self.c.undo(dry_run=True)
        self.assertEqual(res.target, 1)
        self.assertTrue(res.dry_run)
        self.assertEqual(read(self.w.path("main.go")), "one\nTWO\nthree\n")

    def test_7_paths_not_utf8(self):
        name = "caf\udce9.txt"
        self.c.begin_turn(id="latin1")
        self.w.sh("printf 'v1\\n' > \"$(printf 'caf\\351.txt')\"")
        self.c.end_turn()
        self.c.begin_turn(id="latin1-edit")
        self.w.sh("printf 'v2\\n' > \"$(printf 'caf\\351.txt')\"")
        self.c.end_turn()
        self.assertEqual([x.path for x in self.c.turn("latin1").changes], [name])
        self.assertEqual(path_bytes(name), b"caf\xe9.txt")
        # Python's own convention: open() takes the reply's string as it is.
        with open(os.path.join(self.w.dir, name), encoding="utf-8") as f:
            self.assertEqual(f.read(), "v2\n")
        self.assertEqual(self.c.content("latin1-edit", name), b"v1\n")

    def test_8_typed_errors(self):
        self.raises(ConflictError, "conflict", self.c.end_turn, status=409)
        self.raises(ConflictError, "conflict", self.c.begin_step, "s")
        self.raises(ConflictError, "conflict", self.c.begin_turn, id="turn-1")
        self.raises(NotFoundError, "not_found", self.c.turn, "no-such-turn", status=404)
        self.raises(NotFoundError, "not_found", self.c.rollback, 99)
        self.raises(NotFoundError, "not_found", self.c.diff, 1, step="nope")
        self.raises(BadRequestError, "bad_request", self.c.begin_turn, id="42", status=400)
        self.raises(BadRequestError, "bad_request", self.c.turn, "0x10")

        self.c.begin_turn(id="turn-2")
        busy = self.raises(BusyError, "busy", self.c.rollback, 1, status=409)
        self.assertIn("turn", busy.message)
        self.raises(BadRequestError, "bad_request", self.c.begin_step, "")
        self.c.end_turn()


class TestApiError(unittest.TestCase):
    def test_out_of_window_range_from_fields(self):
        e = api_error({"code": "out_of_window", "message": "turns 3 to 4 can be reached", "oldest": 5, "latest": 9}, 410)
        self.assertIsInstance(e, OutOfWindowError)
        self.assertEqual((e.oldest, e.latest, e.status), (5, 9, 410))
        bare = api_error({"code": "out_of_window", "message": "turns 3 to 4 can be reached"}, 410)
        self.assertEqual((bare.oldest, bare.latest), (None, None))

    def test_codes_and_classes_as_the_typescript_client(self):
        for code, cls in [("bad_request", cowfs.BadRequestError), ("forbidden", cowfs.ForbiddenError),
                          ("not_found", cowfs.NotFoundError), ("busy", cowfs.BusyError),
                          ("conflict", cowfs.ConflictError), ("internal", cowfs.InternalError)]:
            e = api_error({"code": code, "message": "m"}, 400)
            self.assertIs(type(e), cls)
            self.assertEqual(e.code, code)
        unknown = api_error({"code": "new_code", "message": "m"}, 400)
        self.assertIs(type(unknown), CowfsError)
        self.assertEqual(unknown.code, "new_code")
        self.assertIsInstance(cowfs.ConnectionError("x"), ConnectionError)  # Python's own too

    def test_replies_tolerate_unknown_fields(self):
        m = cowfs.Marker.from_wire({"turn": 1, "created_at": "t", "note": "n", "future": {"x": 1}})
        self.assertEqual(m.extra, {"future": {"x": 1}})
        self.assertEqual(m.to_wire()["future"], {"x": 1})


class TestPaths(unittest.TestCase):
    def test_bytes_to_strings_and_back(self):
        cases = [
            (b"plain/ascii.txt", "plain/ascii.txt"),
            ("日本/ünï😀.md".encode(), "日本/ünï😀.md"),
            (b"a\xffb", "a\udcffb"),
            (b"\xc3", "\udcc3"),  # a cut sequence
            (b"\xe0\x80\x80", "\udce0\udc80\udc80"),  # overlong
            (b"\xed\xa0\x80", "\udced\udca0\udc80"),  # a surrogate's encoding
            ("\ufffd".encode(), "\ufffd"),  # U+FFFD itself is text
        ]
        for b, s in cases:
            self.assertEqual(path_string(b), s, b)
            self.assertEqual(path_bytes(s), b, s)
        self.assertEqual(path_query("a b/caf\udce9 é.txt"), "a%20b/caf%E9%20%C3%A9.txt")


class TestOutOfWindowShutdown(FuseCase, ErrorCheck):
    @classmethod
    def setUpClass(cls):
        cls.w = workspace(cls, flags=["--window", "2"])

    def test_1_out_of_window_names_the_range(self):
        c = self.w.client()
        for i in range(1, 5):
            c.begin_turn(id=f"t{i}")
            self.w.sh(f"echo {i} > f{i}")
            c.end_turn()
        st = c.status()
        self.assertEqual((st.oldest_turn, st.latest_turn), (3, 4))
        e = self.raises(OutOfWindowError, "out_of_window", c.rollback, 1, status=410)
        self.assertEqual((e.oldest, e.latest), (3, 4))

    def test_2_shutdown_then_no_daemon(self):
        c = self.w.client()
        c.shutdown()
        self.assertTrue(self.w.wait_daemon_exit())
        e = self.raises(NoDaemonError, "no_daemon", c.status)
        self.assertEqual(e.socket, self.w.socket)


class TestPurge(FuseCase, ErrorCheck):
    @classmethod
    def setUpClass(cls):
        cls.w = workspace(cls, seed={"keep.txt": "k\n"})

    def test_refused_while_a_turn_is_open_then_removes_the_journal(self):
        c = self.w.client()
        c.begin_turn(id="t1")
        self.w.sh("echo new > new.txt")
        self.raises(BusyError, "busy", c.purge, status=409)
        c.end_turn()
        removed = c.purge().removed
        self.assertTrue(any(p.endswith("/journal") for p in removed), removed)
        self.assertIn(os.path.join(self.w.dir, ".cowfs"), removed)
        for p in removed:
            self.assertFalse(os.path.lexists(p), p)
        self.assertEqual(read(self.w.path("new.txt")), "new\n")  # the files stay
        self.assertTrue(self.w.wait_daemon_exit(), "daemon still running after the purge")
        self.raises(NoDaemonError, "no_daemon", c.status)


class TestClientArguments(unittest.TestCase):
    def test_workspace_or_socket(self):
        self.assertEqual(Client(socket="/x/ctl.sock").socket, "/x/ctl.sock")
        with self.assertRaises(ValueError):
            Client(workspace="/tmp", socket="/x")
        with self.assertRaises(ValueError):
            Client(workspace="")


if __name__ == "__main__":
    unittest.main()
