"""History against a real daemon: file-change events tagged with the model
step and tool call, undo/redo/revert/unrevert with their counts and markers,
diff (of turns, ranges and steps), and conflicts skipped instead of
overwritten."""

import os
import re
import threading
import unittest
from typing import Dict, List

from cowfs import BadRequestError, ConflictError, FileChangedEvent, History, NotFoundError
from cowfs.testing import TestWorkspace
from support import FuseCase, workspace


def files(w, rel: str = "") -> Dict[str, str]:
    """The workspace's files (not directories) and their contents."""
    out: Dict[str, str] = {}
    for e in sorted(os.scandir(w.path(rel)), key=lambda e: e.name):
        p = e.name if rel == "" else f"{rel}/{e.name}"
        if e.is_dir(follow_symlinks=False):
            out.update(files(w, p))
        else:
            with open(w.path(p), encoding="utf-8") as f:
                out[p] = f.read()
    return dict(sorted(out.items()))


def brief(e: FileChangedEvent) -> str:
    """The parts of an event a test pins down (temporary names of sed -i normalized)."""
    def norm(p):
        return None if p is None else re.sub(r"sed[A-Za-z0-9]{6}$", "sed*", p)
    frm = "" if e.from_ is None else f" from {norm(e.from_)}"
    who = e.cause or f"{e.command} {e.tool_call_id or '-'} {e.step_id or '-'} {e.message_id or '-'}"
    return f"{e.change} {norm(e.path)}{frm} ({who})"


class TestHistory(FuseCase):
    @classmethod
    def setUpClass(cls):
        cls.w = workspace(cls, seed={"README.md": "# app\n"})
        cls.h = History.open(socket=cls.w.socket)
        cls.addClassCleanup(cls.h.close)  # runs before the workspace's cleanup
        cls.events: List[FileChangedEvent] = []
        cls.lock = threading.Lock()

        def on(e):
            with cls.lock:
                cls.events.append(e)

        cls.h.on_file_changed(on)

    def take(self) -> List[str]:
        with self.lock:
            out = [brief(e) for e in self.events]
            self.events.clear()
        return out

    def test_0_finds_the_daemon_from_the_workspace_path(self):
        saved = os.environ.get("COWFS_STATE_DIR")
        os.environ["COWFS_STATE_DIR"] = self.w.state
        try:
            with History.open(workspace=self.w.path("")) as h2:
                self.assertEqual(h2.client.socket, self.w.socket)
        finally:
            if saved is None:
                del os.environ["COWFS_STATE_DIR"]
            else:
                os.environ["COWFS_STATE_DIR"] = saved

    def test_1_file_changes_with_model_step_tool_call_and_message(self):
        h, w = self.h, self.w
        h.begin_turn(id="turn-1", anchor="msg-1")
        h.step("step-1", tool_call_ids=["call-1"])
        w.sh("mkdir -p src && printf 'one\\n' > src/a.txt")
        h.step("step-2", tool_call_ids=["call-2", "call-3"])
        h.tool_call("call-2")
        w.sh("sed -i s/one/ONE/ src/a.txt")
        h.tool_call("call-3")
        w.sh("mv README.md README.txt")
        h.end_turn()
        # end_turn returns once the turn's events have been delivered.
        self.assertEqual(self.take(), [
            "created src (mkdir call-1 step-1 msg-1)",
            "created src/a.txt (sh call-1 step-1 msg-1)",
            "created src/sed* (sed call-2 step-2 msg-1)",
            "moved src/a.txt from src/sed* (sed call-2 step-2 msg-1)",
            "moved README.txt from README.md (mv call-3 step-2 msg-1)",
        ])

    def test_2_undo_redo_revert_unrevert(self):
        h, w = self.h, self.w
        h.begin_turn(id="turn-2", anchor="msg-2")
        h.step("step-3", tool_call_ids=["call-4"])
        w.sh("printf 'two\\n' >> src/a.txt && rm -rf src/b && printf 'b\\n' > b.txt")
        h.end_turn()
        h.begin_turn(id="turn-3", anchor="msg-3")
        h.step("step-4", tool_call_ids=["call-5"])
        w.sh("rm b.txt && mkdir -p build/x && printf 'x\\n' > build/x/y")
        h.end_turn()
        self.take()
        after3 = files(w)

        undo = h.undo()
        self.assertEqual((undo.action, undo.turn, undo.message_id), ("undo", 3, "msg-3"))
        self.assertEqual((undo.marker.message_id, undo.marker.turn_id), ("msg-3", "turn-3"))
        self.assertRegex(undo.marker.note, "removed")
        self.assertEqual(undo.files_restored, 2)  # b.txt recovered, build/x/y deleted
        self.assertEqual(undo.skipped, [])
        self.assertEqual(self.take(), ["created b.txt (undo)", "deleted build (undo)",
                                       "deleted build/x (undo)", "deleted build/x/y (undo)"])
        self.assertEqual(files(w), {"README.txt": "# app\n", "b.txt": "b\n", "src/a.txt": "ONE\ntwo\n"})

        redo = h.redo()
        self.assertEqual((redo.action, redo.message_id, redo.marker), ("redo", "msg-3", None))
        self.assertEqual(redo.files_restored, 2)
        self.assertEqual(self.take(), ["deleted b.txt (redo)", "created build (redo)",
                                       "created build/x (redo)", "created build/x/y (redo)"])
        self.assertEqual(files(w), after3)

        rev = h.revert("msg-1")
        self.assertEqual((rev.turn, rev.message_id, rev.marker.message_id), (1, "msg-1", "msg-1"))
        self.assertEqual(files(w), {"README.md": "# app\n"})
        got = self.take()
        self.assertTrue(got and all(e.endswith("(revert)") for e in got), got)
        self.assertEqual([m.message_id for m in h.markers()], ["msg-1"])

        un = h.unrevert()
        self.assertEqual((un.action, len(un.results), un.message_id), ("unrevert", 1, "msg-1"))
        self.assertEqual(files(w), after3)
        got = self.take()
        self.assertTrue(got and all(e.endswith("(unrevert)") for e in got), got)
        self.assertEqual(h.markers(), [])

    def test_3_unrevert_undoes_every_rewind_redo_only_the_last(self):
        h, w = self.h, self.w
        start = files(w)
        h.undo()  # to before turn 3
        after_undo = files(w)
        h.revert("msg-1")
        self.assertEqual(files(w), {"README.md": "# app\n"})
        redo = h.redo()
        self.assertEqual(redo.message_id, "msg-1")
        self.assertEqual(files(w), after_undo)
        self.assertEqual(h.client.status().unrevertable, 1)

        h.revert("msg-1")
        un = h.unrevert()
        self.assertEqual(len(un.results), 2)
        self.assertEqual(un.message_id, "msg-3")  # the earliest rewind went back to before turn 3
        # The revert: README.txt (a rename, once), src/a.txt, b.txt; the undo: b.txt, build/x/y.
        self.assertEqual(un.files_restored, 3 + 2)
        self.assertEqual(files(w), start)
        with self.assertRaises(ConflictError):
            h.redo()
        with self.assertRaises(ConflictError):
            h.unrevert()
        self.take()

    def test_4_diff_by_message(self):
        d = self.h.diff("msg-2")
        self.assertEqual((d.from_, d.to), ("turn 2", "end of turn 2"))
        self.assertEqual([(f.path, f.status) for f in d.files], [("b.txt", "created"), ("src/a.txt", "modified")])
        self.assertEqual(d.patch, "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+b\n"
                                  "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1,2 @@\n ONE\n+two\n")
        self.assertEqual(self.h.diff("msg-1", "msg-3").to, "turn 3")
        now = self.h.diff("turn-1", "now")
        self.assertEqual(now.to, "now")
        self.assertTrue(any(f.path == "build/x/y" and f.status == "created" for f in now.files))

    def test_5_diff_of_a_step(self):
        h = self.h
        call2 = h.diff("msg-1", step="call-2")
        self.assertEqual((call2.from_, call2.to), ("turn 1 step call-2", "end of the step"))
        self.assertEqual([(f.path, f.status) for f in call2.files], [("src/a.txt", "modified")])
        self.assertEqual(call2.patch, "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n")
        step1 = h.diff(1, step="step-1")
        self.assertEqual([(f.status, f.diff) for f in step1.files if f.path == "src/a.txt"],
                         [("created", "--- /dev/null\n+++ b/src/a.txt\n@@ -0,0 +1 @@\n+one\n")])
        call3 = h.diff("turn-1", step="call-3", stat=True)
        self.assertEqual([(f.path, f.from_, f.status) for f in call3.files], [("README.txt", "README.md", "renamed")])
        self.assertEqual(call3.patch, "")
        with self.assertRaises(NotFoundError):
            h.diff("msg-1", step="no-such-step")
        with self.assertRaises(BadRequestError):
            h.diff("msg-1", "now", step="call-2")

    def test_6_skips_a_file_changed_outside_a_turn_force_restores_it(self):
        h, w = self.h, self.w
        h.begin_turn(id="turn-4", anchor="msg-4")
        w.sh("printf 'agent\\n' > notes.txt && printf 'agent\\n' > other.txt")
        h.end_turn()
        w.sh("printf 'user\\n' > notes.txt")  # the user, between turns

        plan = h.undo(dry_run=True)
        self.assertTrue(plan.dry_run)
        self.assertIsNone(plan.marker)
        self.assertTrue(os.path.exists(w.path("other.txt")))

        undo = h.undo()
        self.assertEqual([p.path for p in undo.skipped], ["notes.txt"])
        self.assertRegex(undo.skipped[0].reason, "outside a turn")
        self.assertEqual(undo.files_restored, 1)
        with open(w.path("notes.txt")) as f:
            self.assertEqual(f.read(), "user\n")
        self.assertFalse(os.path.exists(w.path("other.txt")))
        self.take()

        h.redo()
        forced = h.undo(force=True)
        self.assertEqual(forced.skipped, [])
        self.assertFalse(os.path.exists(w.path("notes.txt")))

    def test_7_nothing_to_rewind(self):
        with self.assertRaises(NotFoundError):
            self.h.revert("msg-unknown")
        w2 = TestWorkspace.create()
        self.addCleanup(lambda: self.assertEqual(w2.cleanup(), []))
        with History.open(socket=w2.socket) as h2:
            with self.assertRaises(NotFoundError):
                h2.undo()
            with self.assertRaises(ConflictError):
                h2.redo()


class TestPurgeSnapshots(FuseCase):
    @classmethod
    def setUpClass(cls):
        cls.w = workspace(cls, seed={"keep.txt": "k\n"})

    def test_purge_snapshots_removes_the_history_keeps_the_files(self):
        h = History.open(socket=self.w.socket)
        h.begin_turn(id="t1", anchor="m1")
        self.w.sh("echo new > new.txt")
        h.end_turn()
        removed = h.purge_snapshots()
        self.assertIn(os.path.join(self.w.dir, ".cowfs"), removed)
        self.assertTrue(self.w.wait_daemon_exit())
        self.assertIsNone(h.stream_error)
        h.close()
        with open(self.w.path("new.txt")) as f:
            self.assertEqual(f.read(), "new\n")


if __name__ == "__main__":
    unittest.main()
