"""A daemon on its way out answers the event stream's reconnect with an
internal error ("DB Closed": the journal is closed, the socket not yet
gone); a following stream waits for the next daemon instead of failing.
A server of this test's stands in for the daemon, to make that moment
happen every time."""

import json
import os
import shutil
import socketserver
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler
from typing import List

from cowfs import EventStream, InternalError


def event(seq: int) -> bytes:
    return json.dumps({"seq": seq, "time": "2026-01-01T00:00:00Z", "type": "turn_begin", "turn": seq}).encode() + b"\n"


class FakeDaemon(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Answers GET /v1/events with the replies in ``plan``, one per request
    (the last one again and again): an int is an error status with an
    internal error, a list of seqs is a stream of those events that ends."""

    daemon_threads = True

    def __init__(self, path: str, plan: list):
        self.plan = plan
        self.requests: List[str] = []
        super().__init__(path, Handler)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        srv: FakeDaemon = self.server  # type: ignore[assignment]
        srv.requests.append(self.path)
        step = srv.plan[min(len(srv.requests), len(srv.plan)) - 1]
        if isinstance(step, int):
            body = json.dumps({"error": {"code": "internal", "message": "DB Closed"}}).encode()
            self.send_response(step)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        body = b"".join(event(s) for s in step)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


class TestInternalErrorOnReconnect(unittest.TestCase):
    def serve(self, plan: list) -> FakeDaemon:
        d = tempfile.mkdtemp(prefix="cowfs-py-fake-")
        self.addCleanup(shutil.rmtree, d, True)
        srv = FakeDaemon(os.path.join(d, "ctl.sock"), plan)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return srv

    def test_a_following_stream_retries_a_daemon_going_away(self):
        srv = self.serve([[1, 2], 500, 500, [2, 3, 4], [4]])
        s = EventStream(srv.server_address, retry_delay=0.001, max_retry_delay=0.01)
        got = []
        for e in s:
            got.append(e.seq)
            if e.seq == 4:
                break
        s.close()
        self.assertEqual(got, [1, 2, 3, 4])
        self.assertEqual(srv.requests[:4], ["/v1/events?since=0&follow=1", "/v1/events?since=2&follow=1",
                                            "/v1/events?since=2&follow=1", "/v1/events?since=2&follow=1"])

    def test_not_following_it_is_an_error(self):
        srv = self.serve([500])
        with self.assertRaises(InternalError):
            list(EventStream(srv.server_address, follow=False))

    def test_an_error_that_stays_is_raised(self):
        srv = self.serve([[1], 500])
        s = EventStream(srv.server_address, retry_delay=0.001, max_retry_delay=0.001)
        got = []
        with self.assertRaises(InternalError):
            for e in s:
                got.append(e.seq)
        self.assertEqual(got, [1])
        self.assertGreater(len(srv.requests), 2)


if __name__ == "__main__":
    unittest.main()
