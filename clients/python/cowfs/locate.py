"""Finding a workspace's control socket from a path, as the CLI does.

This is daemon/location.go in Python (and the TypeScript client's
locate.ts): the state root is ``$COWFS_STATE_DIR``, or ``/var/lib/cowfs``
for root, or ``$XDG_STATE_HOME/cowfs``, or ``~/.local/state/cowfs``; a
workspace's state directory in it is ``NAME-HASH``, NAME its base name
with runs of unsafe bytes replaced by ``_`` (at most 32 bytes) and HASH
the first 6 bytes of the SHA-256 of its absolute path with symlinks
resolved, in hex. A path inside a mounted workspace finds that
workspace: the nearest parent whose socket exists. With
``$COWFS_SOCKET_DIR`` set (a container sharing only its sockets with the
host), the socket is ``NAME-HASH.sock`` there instead of ``ctl.sock`` in
the state directory.

With ``$COWFS_REMOTE`` set (``https://HOST:PORT``, a daemon's TLS listener
on another machine), as for the CLI, that daemon is the one to talk to,
whatever the path, with the client certificate in ``$COWFS_TLS_DIR``
(endpoint_for).

tests/test_locate.py checks the result against the real daemon's own
idea of its socket.
"""

import errno
import hashlib
import os
import re
from dataclasses import dataclass
from typing import Mapping, Optional, Union

from .remote import Remote, parse_remote

#: What fits in sockaddr_un.sun_path.
MAX_SOCKET_PATH = 107

_UNSAFE = re.compile(rb"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Location:
    """Where one workspace's state lives."""

    #: The workspace: absolute, symlinks resolved.
    workspace: str
    #: Its state directory.
    dir: str
    #: Its control socket, ``dir/ctl.sock`` or ``$COWFS_SOCKET_DIR/NAME-HASH.sock``.
    socket: str


def _env(env: Optional[Mapping[str, str]]) -> Mapping[str, str]:
    return os.environ if env is None else env


def state_root(env: Optional[Mapping[str, str]] = None) -> str:
    """The directory per-workspace state directories live in."""
    e = _env(env)
    if e.get("COWFS_STATE_DIR"):
        return e["COWFS_STATE_DIR"]
    if os.getuid() == 0:
        return "/var/lib/cowfs"
    if e.get("XDG_STATE_HOME"):
        return os.path.join(e["XDG_STATE_HOME"], "cowfs")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "cowfs")


def locate(path: str, env: Optional[Mapping[str, str]] = None) -> Location:
    """The location of the workspace at path (which need not be mounted).

    ValueError for an empty path (which names no workspace, never the
    current directory) or a state directory too deep for a socket path.
    """
    e = _env(env)
    abs_path = _canonical(path)
    raw = os.fsencode(abs_path)
    digest = hashlib.sha256(raw).hexdigest()[:12]
    # Go's filepath.Base("/") is "/", which the replacement turns into "_".
    base = b"/" if abs_path == "/" else os.path.basename(raw)
    name = _UNSAFE.sub(b"_", base)[:32].decode("ascii")
    d = os.path.join(state_root(e), f"{name}-{digest}")
    if e.get("COWFS_SOCKET_DIR"):
        sock = os.path.join(e["COWFS_SOCKET_DIR"], f"{name}-{digest}.sock")
    else:
        sock = os.path.join(d, "ctl.sock")
    if len(os.fsencode(sock)) > MAX_SOCKET_PATH:
        raise ValueError(f"state directory {d} is too deep for a Unix socket path; "
                         "set COWFS_STATE_DIR to a shorter one")
    return Location(workspace=abs_path, dir=d, socket=sock)


def find_workspace(path: str, env: Optional[Mapping[str, str]] = None) -> Location:
    """The location of the workspace that contains path.

    path itself or the nearest parent with a daemon's socket; path's own
    location if none has one.
    """
    own = locate(path, env)
    d = own.workspace
    while True:
        try:
            loc: Optional[Location] = locate(d, env)
        except ValueError:
            loc = None  # Too deep for a socket: no daemon can listen there.
        if loc is not None:
            try:
                os.stat(loc.socket)
                return loc
            except FileNotFoundError:
                pass
        if d == "/":
            return own
        d = os.path.dirname(d)


def socket_for(path: str, env: Optional[Mapping[str, str]] = None) -> str:
    """The socket of the daemon serving the workspace that contains path."""
    return find_workspace(path, env).socket


def endpoint_for(path: str, env: Optional[Mapping[str, str]] = None) -> Union[str, Remote]:
    """The daemon to talk to about the workspace that contains path.

    The remote in ``$COWFS_REMOTE``, with the TLS directory in
    ``$COWFS_TLS_DIR``, if it is set (path is then not looked at); or
    else the socket of socket_for(path).
    """
    remote = remote_from_env(env)
    return remote if remote is not None else socket_for(path, env)


def remote_from_env(env: Optional[Mapping[str, str]] = None) -> Optional[Remote]:
    """The remote that ``$COWFS_REMOTE`` and ``$COWFS_TLS_DIR`` name, if the first is set.

    ValueError if the URL will not do, or no TLS directory is set.
    """
    e = _env(env)
    url = e.get("COWFS_REMOTE")
    if not url:
        return None
    if not e.get("COWFS_TLS_DIR"):
        raise ValueError(f"COWFS_REMOTE is {url} but COWFS_TLS_DIR is not set: "
                         "a remote daemon takes only clients with a certificate")
    return parse_remote(url, e["COWFS_TLS_DIR"])


def _canonical(path: str) -> str:
    """path absolute with symlinks resolved.

    The last component is kept as it is if it cannot be resolved (a stale
    mount answers ENOTCONN), as Go's filepath.EvalSymlinks fallback in the
    CLI does; a parent that cannot be resolved is an error.
    """
    if path == "":
        raise ValueError("an empty path names no workspace")
    abs_path = os.path.abspath(path)
    try:
        os.stat(abs_path)
    except OSError:
        parent = os.path.dirname(abs_path)
        try:
            os.stat(parent)
        except OSError as e:
            raise FileNotFoundError(e.errno or errno.ENOENT, f"workspace {path}: {e.strerror}", parent) from e
        return os.path.join(os.path.realpath(parent), os.path.basename(abs_path))
    return os.path.realpath(abs_path)
