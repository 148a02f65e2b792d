"""Who answers on the socket: the client asks the kernel (SO_PEERCRED), as
the Go client and the CLI do, and sends nothing to a server that is neither
root nor this user."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

from cowfs import Client, ForeignSocketError, NoDaemonError, check_server
from support import until

#: A uid that is neither root nor the test's.
NOBODY = 65534

#: A server that listens as NOBODY and counts the connections that ended
#: and the bytes they sent; each line on stdin asks for the counts.
SERVER = r"""
import os, socket, sys, threading
path = sys.argv[1]
os.setgid(65534); os.setuid(65534)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path); s.listen(8)
got = [0, 0]
def serve():
    while True:
        c, _ = s.accept()
        while True:
            b = c.recv(65536)
            if not b: break
            got[1] += len(b)
        c.close()
        got[0] += 1
threading.Thread(target=serve, daemon=True).start()
print("ready", flush=True)
for _ in sys.stdin:
    print(got[0], got[1], flush=True)
"""


def root_skip():
    if os.geteuid() == 0:
        return None
    if os.environ.get("COWFS_TEST_DISALLOW_SKIP"):
        raise RuntimeError("cannot run here: needs root to listen as another user")
    return "needs root to listen as another user"


SKIP = root_skip()


@unittest.skipIf(SKIP, SKIP or "")
class TestTrust(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cowfs-py-trust-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_refuses_a_server_of_another_user_and_sends_it_nothing(self):
        os.chown(self.dir, NOBODY, NOBODY)  # the other user's own directory
        sock = os.path.join(self.dir, "ctl.sock")
        p = subprocess.Popen([sys.executable, "-c", SERVER, sock], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.stdout.close)
        self.addCleanup(p.stdin.close)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        self.assertEqual(p.stdout.readline().strip(), "ready")
        c = Client(socket=sock)
        for call in (c.status, lambda: c.begin_turn(id="secret"), lambda: c.content(1, "secret"),
                     lambda: list(c.events(follow=False))):
            with self.assertRaises(ForeignSocketError) as cm:
                call()
            e = cm.exception
            self.assertEqual((e.code, e.socket, e.uid), ("foreign_socket", sock, NOBODY))
            self.assertTrue(e.message.startswith(f"refused: the control socket {sock} is served by uid {NOBODY}"))
        # A following stream does not retry a foreign server either.
        with self.assertRaises(ForeignSocketError):
            next(iter(c.events()))

        def counts():
            p.stdin.write("?\n")
            p.stdin.flush()
            return tuple(map(int, p.stdout.readline().split()))

        until(lambda: counts()[0] >= 5, "the server to see the 5 connections end")
        self.assertEqual(counts(), (5, 0))

    def test_passes_its_own_server(self):
        sock = os.path.join(self.dir, "own.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(s.close)
        s.bind(sock)
        s.listen(1)
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(c.close)
        c.connect(sock)
        check_server(c, sock)

    def test_no_socket_is_no_daemon(self):
        with self.assertRaises(NoDaemonError):
            Client(socket=os.path.join(self.dir, "none", "ctl.sock")).status()
        with self.assertRaises(NoDaemonError):
            Client(socket=self.dir).status()  # a directory, no socket


if __name__ == "__main__":
    unittest.main()
