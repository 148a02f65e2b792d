"""The event stream: order, the end of a non-following read, stopping, gaps,
and resuming without losing or repeating an event, across a daemon restart
and across a connection dropped in the middle of an event."""

import os
import socket
import tempfile
import threading
import time
import unittest
from typing import List

from cowfs import Event, EventStream
from support import FuseCase, follow_in_thread, until, workspace


def all_events(w) -> List[Event]:
    return list(w.client().events(follow=False))


class CuttingProxy:
    """A Unix socket that forwards to the daemon's, and can drop a connection
    in the middle of what the daemon sends: the next chunk from the daemon
    is cut in half and both ends closed."""

    def __init__(self, target: str):
        self.dir = tempfile.mkdtemp(prefix="cowfs-py-proxy-")
        self.path = os.path.join(self.dir, "proxy.sock")
        self.target = target
        self.cut = threading.Event()
        self.cuts = 0
        self.connections = 0
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(8)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.connect(self.target)
            threading.Thread(target=self._pipe, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, True), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, from_daemon: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if from_daemon and self.cut.is_set():
                    self.cut.clear()
                    self.cuts += 1
                    dst.sendall(data[: max(1, len(data) // 2)])
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self.listener.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


class TestEvents(FuseCase):
    @classmethod
    def setUpClass(cls):
        cls.w = workspace(cls, seed={"a.txt": "a\n"})

    def test_1_follows_in_order_with_who_made_them(self):
        c = self.w.client()
        stream = c.events()
        seen, t = follow_in_thread(stream, 1)
        c.begin_turn(id="t1", anchor="m1")
        c.begin_step("call_1")
        self.w.sh("echo b >> a.txt && mkdir d && rm a.txt")
        c.end_turn()
        t.join(10)
        stream.close()
        self.assertEqual(
            [(e.type, e.turn, e.step, e.path, e.kind, e.command, e.id, e.anchor) for e in seen],
            [
                ("turn_begin", 1, None, None, None, None, "t1", "m1"),
                ("step", 1, "call_1", None, None, None, None, None),
                ("change", 1, "call_1", "a.txt", "modified", "sh", None, None),
                ("change", 1, "call_1", "d", "created", "mkdir", None, None),
                ("change", 1, "call_1", "a.txt", "deleted", "rm", None, None),
                ("turn_end", 1, "call_1", None, None, None, None, None),
            ],
        )
        self.assertEqual([e.seq for e in seen], sorted({e.seq for e in seen}))

    def test_2_without_follow_ends_since_skips(self):
        everything = all_events(self.w)
        self.assertGreaterEqual(len(everything), 6)
        s = self.w.client().events(follow=False, since=everything[2].seq)
        rest = list(s)
        self.assertEqual(rest, everything[3:])
        self.assertEqual(s.last_seq, everything[-1].seq)

    def test_3_close_ends_a_waiting_iteration_quietly(self):
        s = self.w.client().events(since=all_events(self.w)[-1].seq)
        got: List[Event] = []
        t = threading.Thread(target=lambda: got.extend(s), daemon=True)
        t.start()
        time.sleep(0.1)
        s.close()
        t.join(5)
        self.assertFalse(t.is_alive())
        self.assertEqual(got, [])

    def test_4_resumes_after_a_daemon_restart(self):
        c = self.w.client()
        start = all_events(self.w)[-1].seq
        reconnects: List[int] = []
        stream = c.events(since=start, retry_delay=0.02, max_retry_delay=0.2,
                          on_reconnect=lambda since, err: reconnects.append(since))
        seen, t = follow_in_thread(stream, 2)
        try:
            c.begin_turn(id="before-restart")
            self.w.sh("echo 1 > one && echo 2 > two")
            c.end_turn()
            until(lambda: any(e.type == "turn_end" for e in seen), "the first turn's end")

            self.w.umount()  # the stream ends with the daemon
            until(lambda: len(reconnects) >= 3, "reconnect attempts while no daemon runs")
            self.w.mount()

            c.begin_turn(id="after-restart")
            self.w.sh("echo 3 > three && rm one")
            c.end_turn()
            t.join(10)
            self.assertFalse(t.is_alive())
        finally:
            stream.close()
        after = [e for e in all_events(self.w) if e.seq > start]
        self.assertEqual(seen, after)
        self.assertEqual(
            [(e.path, e.kind) for e in seen if e.type == "change"],
            [("one", "created"), ("two", "created"), ("three", "created"), ("one", "deleted")],
        )
        self.assertEqual(stream.last_seq, after[-1].seq)
        # Each reconnect asked for the events after the last one seen.
        self.assertEqual(reconnects, sorted(reconnects))
        self.assertTrue(set(reconnects) <= {e.seq for e in seen}, reconnects)

    def test_5_resumes_after_a_connection_dropped_mid_event(self):
        c = self.w.client()
        start = all_events(self.w)[-1].seq
        proxy = CuttingProxy(self.w.socket)
        self.addCleanup(proxy.close)
        errors: List[object] = []
        stream = EventStream(proxy.path, since=start, retry_delay=0.02,
                             on_reconnect=lambda since, err: errors.append(err))
        seen, t = follow_in_thread(stream, 2)
        try:
            until(lambda: proxy.connections >= 1, "the stream's connection")
            c.begin_turn(id="before-cut")
            self.w.sh("echo 1 > cut1")
            c.end_turn()
            until(lambda: any(e.type == "turn_end" for e in seen), "the first turn's end")
            proxy.cut.set()  # the next event is cut in half, and the connection dropped
            c.begin_turn(id="after-cut")
            self.w.sh("echo 2 > cut2 && echo 3 > cut3")
            c.end_turn()
            t.join(10)
            self.assertFalse(t.is_alive())
        finally:
            stream.close()
        self.assertEqual(proxy.cuts, 1)
        self.assertGreaterEqual(proxy.connections, 2)
        self.assertTrue(errors)
        after = [e for e in all_events(self.w) if e.seq > start]
        self.assertEqual(seen, after)  # nothing lost, nothing twice, no half event
        self.assertEqual([e.path for e in seen if e.type == "change"], ["cut1", "cut2", "cut3"])


class TestGap(FuseCase):
    @classmethod
    def setUpClass(cls):
        cls.w = workspace(cls, flags=["--window", "1"])

    def test_events_that_left_the_window_are_one_gap(self):
        c = self.w.client()
        for i in range(1, 4):
            c.begin_turn()
            self.w.sh(f"echo {i} > f{i}")
            c.end_turn()
        got = list(c.events(since=1, follow=False))
        self.assertEqual(got[0].type, "gap")
        self.assertGreater(got[0].seq, 1)
        self.assertEqual(len([e for e in got if e.type == "gap"]), 1)
        # After the gap: turn 3's events, and the turn_pruned events of the turns that left.
        self.assertTrue(all(e.seq > got[0].seq and (e.turn == 3 or e.type == "turn_pruned") for e in got[1:]))


if __name__ == "__main__":
    unittest.main()
