"""HTTP/1.1 over the daemon's Unix socket, with http.client.

UnixHTTPConnection is an HTTPConnection whose connect() opens an AF_UNIX
socket and then asks the kernel who listens on it (SO_PEERCRED) before
anything is sent: only root and this process's uid are served, as the Go
client and the CLI require (a cowfs daemon runs as one of those). One
connection per request, closed when its reply has been read, so an idle
client holds nothing open.

Error replies become the typed errors of errors.py; failing to connect at
all is a NoDaemonError.
"""

import errno
import http.client
import json
import os
import socket
import struct
from typing import Any, Optional

from .errors import ConnectionError, CowfsError, ForeignSocketError, NoDaemonError, api_error

#: Error replies are read up to this size; the API's are tiny.
MAX_ERROR_BODY = 1 << 20

#: Connecting fails with these when no daemon listens on the socket.
_NOT_LISTENING = {errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK, errno.ENOTDIR}


def check_server(sock: socket.socket, path: str) -> None:
    """Raises ForeignSocketError unless root or this process's uid listens on sock.

    SO_PEERCRED gives the credentials the listener had when it called
    listen(): a socket another user bound, or put at the path, or swapped
    in, answers with theirs.
    """
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    own = os.geteuid()
    if uid not in (0, own):
        raise ForeignSocketError(path, uid, own)


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTPConnection to a cowfs control socket, checked with check_server."""

    def __init__(self, path: str, timeout: Optional[float] = None):
        super().__init__("cowfs", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            try:
                s.connect(self.socket_path)
            except OSError as e:
                if e.errno in _NOT_LISTENING:
                    raise NoDaemonError(self.socket_path) from e
                raise ConnectionError(f"control socket {self.socket_path}: {e}") from e
            check_server(s, self.socket_path)
        except BaseException:
            s.close()
            raise
        self.sock = s


class Response:
    """A successful reply being read; close() it (or use ``with``)."""

    def __init__(self, conn: UnixHTTPConnection, resp: http.client.HTTPResponse):
        self.conn = conn
        self.http = resp

    def read(self) -> bytes:
        try:
            return self.http.read()
        except (OSError, http.client.HTTPException) as e:
            raise ConnectionError(f"control socket {self.conn.socket_path}: reading a reply: {e}") from e

    def close(self) -> None:
        self.http.close()
        self.conn.close()

    def __enter__(self) -> "Response":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_request(path: str, method: str, target: str, body: Any = None,
                 timeout: Optional[float] = None,
                 conn: Optional[UnixHTTPConnection] = None) -> Response:
    """Sends a request and returns its reply once its status is known to be a success.

    An error reply raises the typed error for its code. ``body`` is sent
    as JSON when it is not None. ``conn``: a connection to use, made (and
    perhaps connected) by the caller, which can then break it from
    another thread while the reply is awaited.
    """
    if conn is None:
        conn = UnixHTTPConnection(path, timeout=timeout)
    headers = {"Host": "cowfs"}
    payload: Optional[bytes] = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    try:
        try:
            conn.request(method, target, body=payload, headers=headers)
            resp = conn.getresponse()
        except CowfsError:
            raise
        except (OSError, http.client.HTTPException) as e:
            raise ConnectionError(f"control socket {path}: {method} {target}: {e}") from e
        if resp.status < 300:
            return Response(conn, resp)
        try:
            text = resp.read(MAX_ERROR_BODY)
        except (OSError, http.client.HTTPException) as e:
            raise ConnectionError(f"control socket {path}: reading an error reply: {e}") from e
        raise _error_of(resp.status, resp.reason, text)
    except BaseException:
        conn.close()
        raise


def request_json(path: str, method: str, target: str, body: Any = None,
                 timeout: Optional[float] = None) -> Any:
    """Sends a request and returns its decoded JSON reply."""
    with open_request(path, method, target, body, timeout) as r:
        data = r.read()
    try:
        return json.loads(data.decode("utf-8", "surrogatepass"))
    except ValueError as e:
        raise ConnectionError(f"control socket {path}: bad reply to {method} {target}: {e}") from e


def _error_of(status: int, reason: str, data: bytes) -> CowfsError:
    """The error for an error reply: {"error": {code, message}}, or else an internal error naming the status."""
    text = data.decode("utf-8", "replace")
    try:
        body = json.loads(text)
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict) and isinstance(err.get("code"), str):
            return api_error(err, status)
    except ValueError:
        pass  # Not the API's error shape.
    return api_error({"code": "internal", "message": f"{status} {reason}: {text.strip()}"}, status)
