"""Test helpers: a real cowfs daemon on a real FUSE mount of a temporary workspace.

For the tests of this package and of harnesses built on it, as test/e2e
does for the Go side and ``@cowfs/client/testing`` for TypeScript. The
binary is ``$COWFS_BIN``, or built once per process from the repository
this file lives in with ``go build``; each workspace has its own state
directory; cleanup() unmounts it and ends only the daemons it started,
by pid.

Needs root and /dev/fuse. fuse_skip() says why a test cannot run here;
with ``COWFS_TEST_DISALLOW_SKIP`` set (CI) it raises instead, so a skip
cannot pass for a success. For the remote mode, test_certificates makes a
daemon's and clients' TLS directories with openssl; mount with the flags
``--listen https://127.0.0.1:PORT --tls-dir CERTS.server``.
"""

import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from typing import Dict, List, Optional

from .client import Client
from .testcerts import TestCertificates, test_certificates  # noqa: F401 (for tests of the remote mode)
from .types import Status


def fuse_skip() -> Optional[str]:
    """Why FUSE tests cannot run here (root and /dev/fuse are needed), or None if they can."""
    why = None
    if os.geteuid() != 0:
        why = "needs root to mount"
    elif not os.path.exists("/dev/fuse"):
        why = "needs /dev/fuse"
    if why and os.environ.get("COWFS_TEST_DISALLOW_SKIP"):
        raise RuntimeError(f"cannot run here: {why}")
    return why


_built: Optional[str] = None
_build_lock = threading.Lock()


def cowfs_binary() -> str:
    """The cowfs binary under test: ``$COWFS_BIN``, or built once per process with ``go build``."""
    global _built
    if os.environ.get("COWFS_BIN"):
        return os.environ["COWFS_BIN"]
    with _build_lock:
        if _built is None:
            repo = repository_root()
            d = tempfile.mkdtemp(prefix="cowfs-py-bin-")
            atexit.register(shutil.rmtree, d, True)
            b = os.path.join(d, "cowfs")
            subprocess.run(["go", "build", "-o", b, "./cmd/cowfs"], cwd=repo, check=True)
            _built = b
        return _built


def repository_root() -> str:
    """The cowfs repository: the nearest parent of this file with cowfs's go.mod."""
    d = os.path.dirname(os.path.abspath(__file__))
    while True:
        mod = os.path.join(d, "go.mod")
        if os.path.exists(mod):
            with open(mod, encoding="utf-8") as f:
                if any(line.strip() == "module github.com/cowfs/cowfs" for line in f):
                    return d
        if os.path.dirname(d) == d:
            raise RuntimeError(f"cannot find the cowfs repository above {__file__}; set COWFS_BIN")
        d = os.path.dirname(d)


class CommandError(RuntimeError):
    """A command the helpers ran failed; the message has its output."""


class TestWorkspace:
    """A temporary workspace with its own state directory, mounted by a real daemon."""

    __test__ = False  # not a test class, whatever a collector thinks of its name

    def __init__(self, root: str, name: str, env: Optional[Dict[str, str]] = None):
        #: The temporary directory holding everything.
        self.root = root
        #: The workspace (mounted in place).
        self.dir = os.path.join(root, name)
        #: COWFS_STATE_DIR for every command.
        self.state = os.path.join(root, "state")
        #: The environment cowfs commands run with.
        self.env: Dict[str, str] = dict(os.environ, COWFS_STATE_DIR=self.state)
        self.env.pop("COWFS_SOCKET_DIR", None)
        self.env.update(env or {})
        #: Daemons this workspace started.
        self.pids: List[int] = []
        #: The control socket (known once mounted).
        self.socket = ""

    @classmethod
    def create(cls, name: str = "ws", seed: Optional[Dict[str, str]] = None,
               flags: Optional[List[str]] = None, env: Optional[Dict[str, str]] = None) -> "TestWorkspace":
        """Creates the workspace (seeded: relative path → content) and mounts it (with flags).

        env: variables to add to the commands' environment (COWFS_SOCKET_DIR, say).
        """
        root = tempfile.mkdtemp(prefix="cowfs-py-")
        w = cls(root, name, env)
        try:
            os.mkdir(w.dir)
            for rel, content in (seed or {}).items():
                os.makedirs(os.path.dirname(w.path(rel)), exist_ok=True)
                with open(w.path(rel), "w", encoding="utf-8") as f:
                    f.write(content)
            w.mount(*(flags or []))
        except BaseException:
            w.cleanup()
            raise
        return w

    def path(self, rel: str) -> str:
        """The path of rel in the workspace."""
        return os.path.join(self.dir, rel)

    def cowfs(self, *args: str) -> str:
        """Runs the cowfs CLI on this workspace; raises CommandError with its stderr if it fails."""
        p = subprocess.run([cowfs_binary(), "-w", self.dir, *args], env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise CommandError(f"cowfs {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
        return p.stdout

    def mount(self, *flags: str) -> None:
        """Starts a background daemon for the workspace (again, after umount())."""
        p = subprocess.run([cowfs_binary(), "mount", "--background", *flags, self.dir], env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise CommandError(f"cowfs mount: exit {p.returncode}\n{p.stderr}")
        st = self.status()
        self.pids.append(st.pid)
        self.socket = st.socket

    def status(self) -> Status:
        """The daemon's status, through the CLI."""
        return Status.from_wire(json.loads(self.cowfs("status", "--json")))

    def client(self) -> Client:
        """A client for the daemon."""
        return Client(socket=self.socket)

    def sh(self, script: str) -> str:
        """Runs a shell script in the workspace; raises CommandError with its output if it fails."""
        p = subprocess.run(["sh", "-ec", script], cwd=self.dir, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise CommandError(f"sh: {script}: exit {p.returncode}\n{p.stdout}{p.stderr}")
        return p.stdout

    def umount(self) -> None:
        """Unmounts the workspace and waits for the daemon to exit."""
        self.cowfs("umount")
        if self.pids:
            _wait_exit(self.pids[-1], 30.0)

    def wait_daemon_exit(self, timeout: float = 30.0) -> bool:
        """Waits for the latest daemon to exit (after a shutdown or purge); whether it did."""
        return not self.pids or _wait_exit(self.pids[-1], timeout)

    def cleanup(self) -> List[str]:
        """Unmounts, ends the daemons this workspace started (by pid) if they outlive the unmount,
        detaches a mount left behind, and removes the temporary directory. Returns what it had to force."""
        forced: List[str] = []
        if any(_alive(p) for p in self.pids) or mounted(self.dir):
            try:
                self.cowfs("umount")
            except (CommandError, OSError) as e:
                forced.append(f"umount failed: {e}")
        for pid in self.pids:
            if not _wait_exit(pid, 10.0):
                forced.append(f"daemon {pid} still running after umount; killed")
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _wait_exit(pid, 2.0)
        if mounted(self.dir):
            forced.append(f"{self.dir} still mounted; detached")
            subprocess.run(["umount", "-l", self.dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.root, ignore_errors=True)
        return forced


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A daemon that exited but was not reaped by anyone is a zombie: gone for us.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_exit(pid: int, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def mounted(p: str) -> bool:
    """Whether a FUSE filesystem is mounted at p."""
    with open("/proc/self/mounts", "rb") as f:
        for line in f:
            fields = line.split(b" ")
            if len(fields) < 3:
                continue
            # Spaces, tabs, newlines and backslashes in paths are octal escapes there.
            where = _unescape(fields[1])
            if where == os.fsencode(p) and fields[2].startswith(b"fuse"):
                return True
    return False


def _unescape(b: bytes) -> bytes:
    return re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), b)
