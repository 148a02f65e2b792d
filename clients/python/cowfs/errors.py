"""Typed errors.

Every error reply of the control socket, ``{"error": {"code", "message",
...}}``, becomes an instance of the class for its code, so a harness can
write ``except BusyError``; each keeps the API's code, message and HTTP
status. The class names and codes are the TypeScript client's. Failing to
reach a daemon at all is a NoDaemonError; a connection that breaks, a
ConnectionError; a server of another user on the socket, a
ForeignSocketError; a remote daemon's failed TLS handshake, a TLSError.
"""

import builtins
from typing import Any, Dict, Optional


class CowfsError(Exception):
    """The base of every error this package raises about the daemon.

    ``code`` is the API's error code (``busy``, ``not_found`` …) or a
    client-side one (``no_daemon``, ``connection``, ``foreign_socket``,
    ``tls``);
    ``status`` the HTTP status of the reply (0 when there was none).
    """

    def __init__(self, code: str, message: str, status: int = 0):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status

    def __str__(self) -> str:
        return self.message


class BadRequestError(CowfsError):
    """``bad_request``: malformed request, bad parameter, a path that leaves the workspace."""


class ForbiddenError(CowfsError):
    """``forbidden``: this uid may not use the socket."""


class NotFoundError(CowfsError):
    """``not_found``: no such turn, step, path or endpoint."""


class BusyError(CowfsError):
    """``busy``: a turn is open and the request needs none, or another rollback runs."""


class ConflictError(CowfsError):
    """``conflict``: the request contradicts the state (no open turn, id in use, nothing to unrevert)."""


class InternalError(CowfsError):
    """``internal``: cowfs failed; the daemon's log says why."""


class OutOfWindowError(CowfsError):
    """``out_of_window``: the turn has left the rollback window.

    ``oldest`` and ``latest`` are the range a rollback can reach, from the
    error reply's fields of those names (the message's words are for
    people); None if the reply had none.
    """

    def __init__(self, code: str, message: str, status: int = 0,
                 oldest: Optional[int] = None, latest: Optional[int] = None):
        super().__init__(code, message, status)
        self.oldest = oldest
        self.latest = latest


class NoDaemonError(CowfsError):
    """No daemon answers on the socket (nothing is mounted there, or the daemon
    died), or none accepts connections at a remote's address.

    ``socket`` is the socket tried, or the remote's URL.
    """

    def __init__(self, socket: str):
        where = f"answers at {socket}" if socket.startswith("https://") else \
            f"is running for this workspace (socket {socket})"
        super().__init__("no_daemon", f"no cowfs daemon {where}")
        self.socket = socket


class TLSError(CowfsError):
    """A remote daemon's TLS handshake failed.

    Its certificate did not verify against ca.pem (or does not name the
    URL's host), it refused this client's certificate (another CA's,
    expired, none), or the client's own TLS directory could not be used.
    Nothing was sent; trying again would only fail again, so an event
    stream stops with it. ``remote`` is the remote's URL.
    """

    def __init__(self, remote: str, message: str):
        super().__init__("tls", f"{remote}: {message}")
        self.remote = remote


class ConnectionError(CowfsError, builtins.ConnectionError):  # noqa: A001 (the TypeScript client's name)
    """The connection to the daemon broke during a request or a stream.

    It is also Python's own ConnectionError, so ``except
    ConnectionError`` catches it whichever of the two is meant.
    """

    def __init__(self, message: str):
        CowfsError.__init__(self, "connection", message)


class ForeignSocketError(CowfsError):
    """The process listening on the socket is neither root nor this user.

    The client asks the kernel who listens (SO_PEERCRED) right after it
    connects, as the Go client and the CLI do, and sends nothing to
    anyone else: a socket another user put at the path would otherwise
    receive the harness's turns and rollbacks and answer them.
    ``socket`` is the path, ``uid`` who listens on it.
    """

    def __init__(self, socket: str, uid: int, own_uid: int):
        super().__init__(
            "foreign_socket",
            f"refused: the control socket {socket} is served by uid {uid}, not by root or uid {own_uid} "
            "(this user): a cowfs daemon runs as one of those; nothing was sent to it",
        )
        self.socket = socket
        self.uid = uid


_BY_CODE = {
    "bad_request": BadRequestError,
    "forbidden": ForbiddenError,
    "not_found": NotFoundError,
    "busy": BusyError,
    "conflict": ConflictError,
    "internal": InternalError,
}


def api_error(body: Dict[str, Any], status: int) -> CowfsError:
    """The typed error for an error reply's ``error`` object."""
    code = str(body.get("code", "internal"))
    message = str(body.get("message", ""))
    if code == "out_of_window":
        oldest = body.get("oldest")
        latest = body.get("latest")
        return OutOfWindowError(
            code, message, status,
            oldest if isinstance(oldest, int) and not isinstance(oldest, bool) else None,
            latest if isinstance(latest, int) and not isinstance(latest, bool) else None,
        )
    cls = _BY_CODE.get(code)
    if cls is None:
        # A code this client does not know yet: the API may add codes.
        return CowfsError(code, message, status)
    return cls(code, message, status)
