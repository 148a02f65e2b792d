"""The remote mode: a daemon's mutual-TLS listener on 127.0.0.1
(``cowfs mount --listen --tls-dir``), with certificates made here by
openssl.

Status, a turn, a rollback and the event stream over TLS; the daemon
refusing a client without a certificate, with another CA's and with an
expired one, and the client refusing a daemon its ca.pem does not vouch
for or whose certificate names another host; the stream resuming across a
daemon restart, across a TCP connection dropped in the middle of a TLS
record, and across a harness killed mid-stream and started again from the
last seq it saw.
"""

import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import unittest
from typing import List

from cowfs import Client, Event, EventStream, NoDaemonError, TLSError, endpoint_for, parse_remote
from cowfs.remote import read_tls_dir
from cowfs.testing import TestCertificates, test_certificates
from support import FuseCase, follow_in_thread, until, workspace
from wire_schema import check_reply

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on just now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def all_events(c: Client) -> List[Event]:
    return list(c.events(follow=False))


def last_seq(c: Client) -> int:
    """The seq of the latest event in the window (0: none)."""
    everything = all_events(c)
    return everything[-1].seq if everything else 0


def certificates(case: unittest.TestCase) -> TestCertificates:
    d = tempfile.mkdtemp(prefix="cowfs-py-tls-")
    case.addCleanup(shutil.rmtree, d, True)
    return test_certificates(d)


class Refusals(unittest.TestCase):
    def refused(self, fn, pattern: str) -> TLSError:
        with self.assertRaises(TLSError) as cm:
            fn()
        self.assertEqual(cm.exception.code, "tls")
        self.assertRegex(cm.exception.message, pattern)
        return cm.exception


class TestParseRemote(unittest.TestCase):
    def test_takes_https_host_port_only(self):
        r = parse_remote("https://127.0.0.1:8443", "/etc/cowfs/client")
        self.assertEqual((r.url, r.host, r.port, r.tls_dir), ("https://127.0.0.1:8443", "127.0.0.1", 8443, "/etc/cowfs/client"))
        self.assertEqual(parse_remote("https://[::1]:8443/", "/d").host, "::1")
        for url, why in (("http://127.0.0.1:8443", "scheme must be https"), ("https://127.0.0.1", "no port"),
                         ("https://127.0.0.1:8443/v1", "nothing more"), ("127.0.0.1:8443", "scheme must be https"),
                         ("https://127.0.0.1:x", "want https://HOST:PORT")):
            with self.assertRaisesRegex(ValueError, why, msg=url):
                parse_remote(url, "/d")

    def test_takes_no_remote_without_a_client_certificate(self):
        with self.assertRaisesRegex(ValueError, "no client certificate"):
            parse_remote("https://127.0.0.1:8443", "")
        with self.assertRaisesRegex(ValueError, "COWFS_TLS_DIR is not set"):
            endpoint_for("/tmp", {"COWFS_REMOTE": "https://127.0.0.1:8443"})

    def test_is_what_cowfs_remote_and_cowfs_tls_dir_name_whatever_the_path(self):
        env = {"COWFS_REMOTE": "https://127.0.0.1:8443", "COWFS_TLS_DIR": "/etc/cowfs/client"}
        self.assertEqual(endpoint_for("/nonexistent/workspace", env), parse_remote(env["COWFS_REMOTE"], env["COWFS_TLS_DIR"]))
        c = Client(remote="https://127.0.0.1:8443", tls_dir="/d")
        self.assertEqual((c.remote, c.socket), ("https://127.0.0.1:8443", ""))
        with self.assertRaisesRegex(ValueError, "one of"):
            Client(socket="/x", remote="https://127.0.0.1:8443", tls_dir="/d")


class TestTLSDir(Refusals):
    def setUp(self):
        self.certs = certificates(self)
        self.root = os.path.dirname(self.certs.client)

    def test_reads_through_symlinks_as_a_secret_volume_lays_it_out(self):
        linked = os.path.join(self.root, "linked")
        os.makedirs(os.path.join(linked, "..data"), 0o700)
        for f in ("ca.pem", "cert.pem", "key.pem"):
            shutil.copy2(os.path.join(self.certs.client, f), os.path.join(linked, "..data", f))
            os.symlink(os.path.join("..data", f), os.path.join(linked, f))
        self.assertEqual(read_tls_dir(linked), read_tls_dir(self.certs.client))
        self.assertIn(b"BEGIN CERTIFICATE", read_tls_dir(linked))

    def test_refuses_what_others_could_change_or_read(self):
        d = os.path.join(self.root, "loose")
        shutil.copytree(self.certs.client, d)
        os.chmod(os.path.join(d, "key.pem"), 0o644)
        with self.assertRaisesRegex(PermissionError, r"private key .*key\.pem is open to others \(mode 0644\)"):
            read_tls_dir(d)
        os.chmod(os.path.join(d, "key.pem"), 0o600)
        os.chmod(os.path.join(d, "ca.pem"), 0o666)
        with self.assertRaisesRegex(PermissionError, r"ca\.pem is writable by its group or others"):
            read_tls_dir(d)
        os.chmod(os.path.join(d, "ca.pem"), 0o644)
        os.chmod(d, 0o777)
        with self.assertRaisesRegex(PermissionError, r"writable by its group or others \(mode 0777\)"):
            read_tls_dir(d)
        os.chmod(d, 0o700)
        os.remove(os.path.join(d, "cert.pem"))
        with self.assertRaises(FileNotFoundError):
            read_tls_dir(d)

    def test_a_client_with_unusable_material_fails_with_a_tls_error_before_connecting(self):
        c = Client(remote="https://127.0.0.1:1", tls_dir=os.path.join(self.root, "nonexistent"))
        self.refused(c.status, "TLS directory")
        self.refused(lambda: list(c.events()), "TLS directory")


class TestDaemonName(Refusals):
    """A stand-in for a daemon whose certificate names another host: it
    answers anything, so only the client's check can refuse it."""

    def test_a_certificate_for_another_host_does_not_do(self):
        certs = certificates(self)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.load_cert_chain(os.path.join(certs.misnamed, "cert.pem"), os.path.join(certs.misnamed, "key.pem"))
        ctx.load_verify_locations(os.path.join(certs.misnamed, "ca.pem"))
        ctx.verify_mode = ssl.CERT_REQUIRED
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(4)
        self.addCleanup(lsock.close)

        def serve() -> None:
            while True:
                try:
                    conn, _ = lsock.accept()
                except OSError:
                    return
                try:
                    with ctx.wrap_socket(conn, server_side=True) as t:
                        t.recv(65536)
                        t.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                except OSError:
                    pass  # the client gave up on the handshake

        threading.Thread(target=serve, daemon=True).start()
        port = lsock.getsockname()[1]
        c = Client(remote=f"https://127.0.0.1:{port}", tls_dir=certs.client)
        self.refused(c.status, r"not trusted .*IP address mismatch")


class RemoteCase(FuseCase, Refusals):
    """A workspace whose daemon also listens on 127.0.0.1 over mutual TLS."""

    @classmethod
    def setUpClass(cls):
        d = tempfile.mkdtemp(prefix="cowfs-py-remote-")
        cls.addClassCleanup(shutil.rmtree, d, True)
        cls.certs = test_certificates(d)
        cls.url = f"https://127.0.0.1:{free_port()}"
        cls.flags = ["--listen", cls.url, "--tls-dir", cls.certs.server]
        cls.w = workspace(cls, seed={"main.go": "one\ntwo\n"}, flags=cls.flags)
        cls.c = Client(remote=cls.url, tls_dir=cls.certs.client)


class TestRemote(RemoteCase):
    def test_1_status(self):
        st = self.c.status()
        self.assertEqual(st.workspace, self.w.dir)
        self.assertEqual(st.pid, self.w.pids[0])
        self.assertEqual(st.listen, self.url)
        self.assertEqual(self.c.remote, self.url)
        # A status with listen set matches the types key by key (test_contract.py sees one without).
        self.assertEqual(check_reply("Status", st.to_wire()), [])

    def test_2_a_turn_its_events_and_a_rollback(self):
        c, w = self.c, self.w
        stream = c.events(since=last_seq(c))
        seen: List[Event] = []

        def follow() -> None:
            for e in stream:
                seen.append(e)
                if e.type == "rollback":
                    return

        t = threading.Thread(target=follow, daemon=True)
        t.start()
        try:
            self.assertEqual(c.begin_turn(id="remote-1", anchor="m1").state, "open")
            c.begin_step("call_1")
            w.sh("echo three >> main.go && echo new > new.txt")
            self.assertEqual(c.end_turn().changed_paths, 2)
            self.assertEqual([(x.path, x.kind) for x in c.turn("remote-1").changes],
                             [("main.go", "modified"), ("new.txt", "created")])
            self.assertEqual(c.content("remote-1", "main.go"), b"one\ntwo\n")
            res = c.rollback("remote-1")
            self.assertTrue(res.complete)
            with open(w.path("main.go"), encoding="utf-8") as f:
                self.assertEqual(f.read(), "one\ntwo\n")
            self.assertFalse(os.path.exists(w.path("new.txt")))
            t.join(10)
            self.assertFalse(t.is_alive())
        finally:
            stream.close()
        self.assertEqual(
            [(e.type, e.path, e.kind) for e in seen if e.type != "change" or e.rollback is None],
            [("turn_begin", None, None), ("step", None, None), ("change", "main.go", "modified"),
             ("change", "new.txt", "created"), ("turn_end", None, None), ("rollback", None, None)],
        )

    def test_3_refused_without_a_client_certificate_with_another_cas_and_with_an_expired_one(self):
        # Past the client, which takes no remote without a certificate.
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.load_verify_locations(os.path.join(self.certs.client, "ca.pem"))
        conn = http.client.HTTPSConnection("127.0.0.1", int(self.url.rsplit(":", 1)[1]), context=ctx)
        try:
            with self.assertRaisesRegex(ssl.SSLError, "CERTIFICATE_REQUIRED"):
                conn.request("GET", "/v1/status")
                conn.getresponse()
        finally:
            conn.close()

        other = Client(remote=self.url, tls_dir=self.certs.other_ca)
        expired = Client(remote=self.url, tls_dir=self.certs.expired)
        self.refused(other.status, r"refused the TLS connection \(unknown ca\)")
        self.refused(expired.status, r"refused the TLS connection \(certificate expired\)")
        # A stream ends with the refusal: trying again would be refused again.
        self.refused(lambda: list(other.events(follow=False)), "unknown ca")
        self.refused(lambda: list(expired.events()), "certificate expired")

    def test_4_refuses_a_daemon_its_ca_does_not_vouch_for(self):
        self.refused(Client(remote=self.url, tls_dir=self.certs.untrusting).status, "daemon's certificate is not trusted")

    def test_5_resumes_after_a_daemon_restart(self):
        c, w = self.c, self.w
        start = last_seq(c)
        reconnects: List[int] = []
        stream = c.events(since=start, retry_delay=0.02, max_retry_delay=0.2,
                          on_reconnect=lambda since, err: reconnects.append(since))
        seen, t = follow_in_thread(stream, 2)
        try:
            c.begin_turn(id="before-restart")
            w.sh("echo 1 > one && echo 2 > two")
            c.end_turn()
            until(lambda: any(e.type == "turn_end" for e in seen), "the first turn's end")

            w.umount()  # the stream ends with the daemon
            until(lambda: len(reconnects) >= 3, "reconnect attempts while no daemon listens")
            with self.assertRaises(NoDaemonError):
                c.status()
            w.mount(*self.flags)

            c.begin_turn(id="after-restart")
            w.sh("echo 3 > three && rm one")
            c.end_turn()
            t.join(10)
            self.assertFalse(t.is_alive())
        finally:
            stream.close()
        after = [e for e in all_events(c) if e.seq > start]
        self.assertEqual(seen, after)
        self.assertEqual([(e.path, e.kind) for e in seen if e.type == "change"],
                         [("one", "created"), ("two", "created"), ("three", "created"), ("one", "deleted")])
        self.assertEqual(stream.last_seq, after[-1].seq)

    def test_6_resumes_after_a_connection_dropped_mid_record(self):
        c, w = self.c, self.w
        start = last_seq(c)
        proxy = CuttingProxy(int(self.url.rsplit(":", 1)[1]))
        self.addCleanup(proxy.close)
        errors: List[object] = []
        stream = EventStream(parse_remote(f"https://127.0.0.1:{proxy.port}", self.certs.client), since=start,
                             retry_delay=0.02, on_reconnect=lambda since, err: errors.append(err))
        seen, t = follow_in_thread(stream, 2)
        try:
            until(lambda: proxy.connections >= 1, "the stream's connection")
            c.begin_turn(id="before-cut")
            w.sh("echo 1 > cut1")
            c.end_turn()
            until(lambda: any(e.type == "turn_end" for e in seen), "the first turn's end")
            proxy.cut.set()  # the next TLS record is cut in half, and the connection dropped
            c.begin_turn(id="after-cut")
            w.sh("echo 2 > cut2 && echo 3 > cut3")
            c.end_turn()
            t.join(10)
            self.assertFalse(t.is_alive())
        finally:
            stream.close()
        self.assertEqual(proxy.cuts, 1)
        self.assertGreaterEqual(proxy.connections, 2)
        self.assertTrue(errors)
        after = [e for e in all_events(c) if e.seq > start]
        self.assertEqual(seen, after)  # nothing lost, nothing twice, no half event
        self.assertEqual([e.path for e in seen if e.type == "change"], ["cut1", "cut2", "cut3"])

    def test_7_a_harness_killed_mid_stream_resumes_from_the_last_seq_it_saw(self):
        c, w = self.c, self.w
        start = last_seq(c)
        first = Harness(self.url, self.certs.client, start)
        try:
            c.begin_turn(id="harness-1")
            w.sh("echo a > a1 && echo a > a2")
            until(lambda: len(changes(first.got)) == 2, "the first harness's two changes")
        finally:
            first.kill()
        # The harness is gone; the agent goes on.
        w.sh("echo b > b1 && echo b > b2")
        c.end_turn()

        second = Harness(self.url, self.certs.client, first.got[-1]["seq"])
        try:
            c.begin_turn(id="harness-2")
            w.sh("echo c > c1")
            c.end_turn()
            until(lambda: sum(e["type"] == "turn_end" for e in second.got) == 2, "the second harness's two turn ends")
        finally:
            second.kill()
        after = [e.to_wire() for e in all_events(c) if e.seq > start]
        self.assertEqual(first.got + second.got, after)
        self.assertEqual(changes(after), ["a1", "a2", "b1", "b2", "c1"])


    def test_8_close_ends_a_waiting_remote_iteration_quietly(self):
        s = self.c.events(since=last_seq(self.c))
        got: List[Event] = []
        t = threading.Thread(target=lambda: got.extend(s), daemon=True)
        t.start()
        until(lambda: s._conn is not None, "the stream's connection")
        s.close()
        t.join(5)
        self.assertFalse(t.is_alive())
        self.assertEqual(got, [])


def changes(evs: List[dict]) -> List[str]:
    return [e["path"] for e in evs if e["type"] == "change"]


class Harness:
    """remote_follower.py in a process of its own, its events read as they come."""

    def __init__(self, url: str, tls_dir: str, since: int):
        self.got: List[dict] = []
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "remote_follower.py"), url, tls_dir, str(since)],
                                     stdout=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.got.append(json.loads(line))

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.reader.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class CuttingProxy:
    """A TCP port on 127.0.0.1 that forwards to the daemon's listener, and
    can drop a connection in the middle of what the daemon sends: the next
    chunk from the daemon (a TLS record, or part of one) is cut in half and
    both ends closed."""

    def __init__(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        self.cut = threading.Event()
        self.cuts = 0
        self.connections = 0
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.socks: List[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            server = socket.create_connection(self.target)
            self.socks += [client, server]
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
            _shut(s)

    def close(self) -> None:
        self.listener.close()
        for s in self.socks:
            _shut(s)


def _shut(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()

