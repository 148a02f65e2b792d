"""HTTP/1.1 to a daemon, with http.client: over its Unix socket, or to its TLS listener.

UnixHTTPConnection is an HTTPConnection whose connect() opens an AF_UNIX
socket and then asks the kernel who listens on it (SO_PEERCRED) before
anything is sent: only root and this process's uid are served, as the Go
client and the CLI require (a cowfs daemon runs as one of those).
TLSHTTPConnection is an HTTPSConnection to a remote (remote.py), whose
certificate is the check. One connection per request, closed when its
reply has been read, so an idle client holds nothing open.

Error replies become the typed errors of errors.py; failing to connect at
all is a NoDaemonError. A TLS handshake that fails, on either side, is a
TLSError, which nobody retries: a daemon that refuses this client's
certificate refuses it again. With TLS 1.3 the daemon checks the client's
certificate after the client has finished its side of the handshake, so
its refusal (an alert: certificate required, unknown CA, certificate
expired) arrives when the reply is awaited; it is a TLSError all the same.
"""

import errno
import http.client
import json
import os
import socket
import ssl
import struct
from typing import Any, Optional, Union

from .errors import ConnectionError, CowfsError, ForeignSocketError, NoDaemonError, TLSError, api_error
from .remote import Remote

#: A daemon to talk to: its control socket's path, or a remote TLS listener (parse_remote).
Endpoint = Union[str, Remote]

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


class TLSHTTPConnection(http.client.HTTPSConnection):
    """An HTTPSConnection to a remote daemon, with the TLS context of its directory.

    ``socket_path`` is the remote's URL, for errors.
    """

    def __init__(self, remote: Remote, timeout: Optional[float] = None):
        super().__init__(remote.host, remote.port, timeout=timeout, context=remote.context())
        self.remote = remote
        self.socket_path = remote.url

    def connect(self) -> None:
        try:
            super().connect()
        except _TLS_BROKEN as e:
            raise ConnectionError(f"{self.remote.url}: {e}") from e
        except ssl.SSLError as e:
            raise TLSError(self.remote.url, tls_failure(e)) from e
        except ConnectionRefusedError as e:
            raise NoDaemonError(self.remote.url) from e
        except OSError as e:
            raise ConnectionError(f"{self.remote.url}: {e}") from e

    def refusal(self) -> Optional[TLSError]:
        """The daemon's refusal of this client's certificate, if that is why a send failed.

        The daemon's alert may come before the request is written: the
        write then fails on the closed connection (SSLEOFError), and the
        alert is still there to read.
        """
        if self.sock is None:
            return None
        try:
            self.sock.settimeout(1.0)
            self.sock.recv(1)
        except ssl.SSLError as e:
            if not isinstance(e, _TLS_BROKEN):
                return TLSError(self.remote.url, tls_failure(e))
        except OSError:
            pass
        return None


def tls_failure(e: ssl.SSLError) -> str:
    """A TLS failure in words: who refused what."""
    reason = getattr(e, "reason", None) or ""
    if isinstance(e, ssl.SSLCertVerificationError):
        return (f"the daemon's certificate is not trusted ({e.verify_message or e}): "
                "it must be signed by the CA in ca.pem and name the URL's host")
    if "ALERT_" in reason:
        # An alert the daemon sent: TLSV13_ALERT_CERTIFICATE_REQUIRED, TLSV1_ALERT_UNKNOWN_CA ...
        alert = reason.split("ALERT_", 1)[1].replace("_", " ").lower()
        hint = ": it takes only an unexpired client certificate signed by its CA" \
            if "certificate" in alert or "unknown ca" in alert or "access denied" in alert else ""
        return f"the daemon refused the TLS connection ({alert}){hint}"
    return f"TLS handshake failed: {e}"


#: TLS's words for a connection that broke, not a handshake that failed.
_TLS_BROKEN = (ssl.SSLEOFError, ssl.SSLZeroReturnError)


def connection(to: Endpoint, timeout: Optional[float] = None) -> http.client.HTTPConnection:
    """A new (unconnected) connection to a socket or a remote."""
    if isinstance(to, Remote):
        return TLSHTTPConnection(to, timeout=timeout)
    return UnixHTTPConnection(to, timeout=timeout)


def describe(to: Endpoint) -> str:
    """Says which daemon, in errors."""
    return f"cowfs daemon at {to.url}" if isinstance(to, Remote) else f"control socket {to}"


class Response:
    """A successful reply being read; close() it (or use ``with``)."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse):
        self.conn = conn
        self.http = resp

    def read(self) -> bytes:
        try:
            return self.http.read()
        except (OSError, http.client.HTTPException) as e:
            raise ConnectionError(f"{_where(self.conn)}: reading a reply: {e}") from e

    def close(self) -> None:
        self.http.close()
        self.conn.close()

    def __enter__(self) -> "Response":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_request(to: Endpoint, method: str, target: str, body: Any = None,
                 timeout: Optional[float] = None,
                 conn: Optional[http.client.HTTPConnection] = None) -> Response:
    """Sends a request to a socket or a remote and returns its reply once its status is known to be a success.

    An error reply raises the typed error for its code. ``body`` is sent
    as JSON when it is not None. ``conn``: a connection to use, made (and
    perhaps connected) by the caller, which can then break it from
    another thread while the reply is awaited.
    """
    if conn is None:
        conn = connection(to, timeout=timeout)
    # A remote gets its own HOST:PORT (http.client's default); the socket has no host.
    headers = {} if isinstance(to, Remote) else {"Host": "cowfs"}
    payload: Optional[bytes] = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    where = describe(to)
    try:
        try:
            conn.request(method, target, body=payload, headers=headers)
            resp = conn.getresponse()
        except CowfsError:
            raise
        except (OSError, http.client.HTTPException) as e:
            if isinstance(to, Remote) and isinstance(e, ssl.SSLError) and not isinstance(e, _TLS_BROKEN):
                raise TLSError(to.url, tls_failure(e)) from e
            refused = conn.refusal() if isinstance(conn, TLSHTTPConnection) and isinstance(e, OSError) else None
            if refused is not None:
                raise refused from e
            raise ConnectionError(f"{where}: {method} {target}: {e}") from e
        if resp.status < 300:
            return Response(conn, resp)
        try:
            text = resp.read(MAX_ERROR_BODY)
        except (OSError, http.client.HTTPException) as e:
            raise ConnectionError(f"{where}: reading an error reply: {e}") from e
        raise _error_of(resp.status, resp.reason, text)
    except BaseException:
        conn.close()
        raise


def request_json(to: Endpoint, method: str, target: str, body: Any = None,
                 timeout: Optional[float] = None) -> Any:
    """Sends a request and returns its decoded JSON reply."""
    with open_request(to, method, target, body, timeout) as r:
        data = r.read()
    try:
        return json.loads(data.decode("utf-8", "surrogatepass"))
    except ValueError as e:
        raise ConnectionError(f"{describe(to)}: bad reply to {method} {target}: {e}") from e


def _where(conn: http.client.HTTPConnection) -> str:
    if isinstance(conn, TLSHTTPConnection):
        return f"cowfs daemon at {conn.remote.url}"
    return f"control socket {getattr(conn, 'socket_path', '?')}"


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
