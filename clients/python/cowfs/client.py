"""Client: one method per endpoint of docs/api.md.

Replies are the dataclasses of types.py; error replies raise the typed
errors of errors.py. Every call opens its own connection to the socket
(checked with SO_PEERCRED before anything is sent), or to a remote
daemon's TLS listener (remote.py), and closes it, so a Client may be
shared between threads.
"""

import os
from typing import Any, Dict, Iterable, Optional, Union
from urllib.parse import quote, urlencode

from .errors import NotFoundError
from .events import EventStream, ReconnectHook
from .locate import endpoint_for
from .paths import path_query
from .remote import Remote, parse_remote
from .transport import Endpoint, open_request, request_json
from .types import (
    AgentScope,
    Diff,
    MarkerList,
    OutsideChanges,
    Purged,
    RollbackResult,
    Status,
    StepList,
    StepStarted,
    Turn,
    TurnDetail,
    TurnList,
    TurnRef,
)


class Client:
    """A client for one daemon, through its control socket or its TLS listener.

    ``Client(workspace=path)`` finds the daemon serving the workspace that
    contains path, as the CLI does (the workspace itself or the nearest
    parent with a daemon), or, with ``$COWFS_REMOTE`` set, takes that
    remote daemon with the client certificate in ``$COWFS_TLS_DIR``;
    ``Client(socket=path)`` uses that socket; ``Client()`` starts from the
    current directory. ``Client(remote="https://HOST:PORT", tls_dir=DIR)``
    talks to a daemon's TLS listener (``cowfs mount --listen``) over
    mutual TLS 1.3: DIR holds ca.pem, which must have signed the daemon's
    certificate (and that must name HOST), and the client's cert.pem and
    key.pem (``tls_dir`` defaults to ``$COWFS_TLS_DIR``; a remote without
    one is a ValueError). ``timeout`` (seconds, default none) bounds each
    request's connect and reads, not an event stream's wait for the next
    event.
    """

    def __init__(self, workspace: Optional[str] = None, socket: Optional[str] = None,
                 timeout: Optional[float] = None, remote: Optional[str] = None,
                 tls_dir: Optional[str] = None):
        if sum(x is not None for x in (workspace, socket, remote)) > 1:
            raise ValueError("give one of workspace, socket and remote")
        if tls_dir is not None and remote is None:
            raise ValueError("tls_dir is for a remote")
        endpoint: Endpoint
        if remote is not None:
            endpoint = parse_remote(remote, tls_dir or os.environ.get("COWFS_TLS_DIR", ""))
        elif socket is not None:
            endpoint = socket
        else:
            endpoint = endpoint_for(os.getcwd() if workspace is None else workspace)
        #: Where requests go: the socket's path, or the remote and its TLS directory.
        self.endpoint = endpoint
        #: The control socket's path ("" for a remote client).
        self.socket = endpoint if isinstance(endpoint, str) else ""
        #: The remote's URL (None for a socket client).
        self.remote = endpoint.url if isinstance(endpoint, Remote) else None
        self.timeout = timeout

    def __repr__(self) -> str:
        if self.remote is not None:
            return f"cowfs.Client(remote={self.remote!r})"
        return f"cowfs.Client(socket={self.socket!r})"

    def _json(self, method: str, target: str, body: Any = None) -> Any:
        return request_json(self.endpoint, method, target, body, self.timeout)

    def status(self) -> Status:
        """``GET /v1/status``."""
        return Status.from_wire(self._json("GET", "/v1/status"))

    def begin_turn(self, id: Optional[str] = None, anchor: Optional[str] = None,
                   agent: Optional[Union[AgentScope, Dict[str, Any]]] = None) -> Turn:
        """``POST /v1/turns``: begin a turn.

        ``id`` is the harness's own id (unique in the window, not a
        number), ``anchor`` ties the turn to the conversation (the user
        message's id), ``agent`` names the processes that are the turn's
        agent (absent: the daemon's default). BusyError if a turn is open,
        ConflictError if the id is in use.
        """
        body: Dict[str, Any] = {}
        if id is not None:
            body["id"] = id
        if anchor is not None:
            body["anchor"] = anchor
        if agent is not None:
            body["agent"] = agent.to_wire() if isinstance(agent, AgentScope) else dict(agent)
        return Turn.from_wire(self._json("POST", "/v1/turns", body))

    def begin_step(self, id: str, name: Optional[str] = None) -> StepStarted:
        """``POST /v1/turns/current/steps``: a step (a tool call) of the open turn begins.

        ``name`` says what it is (the tool's name). ConflictError if no turn is open.
        """
        body = {"id": id} if name is None else {"id": id, "name": name}
        return StepStarted.from_wire(self._json("POST", "/v1/turns/current/steps", body))

    def end_turn(self) -> Turn:
        """``POST /v1/turns/current/end``: end the open turn. ConflictError if none is open."""
        return Turn.from_wire(self._json("POST", "/v1/turns/current/end", {}))

    def turns(self) -> TurnList:
        """``GET /v1/turns``: the turns in the window, oldest first."""
        return TurnList.from_wire(self._json("GET", "/v1/turns"))

    def turn(self, ref: TurnRef, step: Optional[str] = None) -> TurnDetail:
        """``GET /v1/turns/{ref}``: one turn and its changes (only one step's, with ``step``)."""
        target = "/v1/turns/" + quote(str(ref), safe="")
        if step is not None:
            target += "?" + urlencode({"step": step})
        return TurnDetail.from_wire(self._json("GET", target))

    def steps(self, ref: TurnRef) -> StepList:
        """``GET /v1/turns/{ref}/steps``: a turn's steps in order, each with what it changed."""
        return StepList.from_wire(self._json("GET", "/v1/turns/" + quote(str(ref), safe="") + "/steps"))

    def outside(self) -> OutsideChanges:
        """``GET /v1/outside``: the changes made while no turn was open."""
        return OutsideChanges.from_wire(self._json("GET", "/v1/outside"))

    def events(self, since: int = 0, follow: bool = True, retry_delay: float = 0.05,
               max_retry_delay: float = 2.0, on_reconnect: Optional[ReconnectHook] = None) -> EventStream:
        """``GET /v1/events``: the events after ``since``.

        With ``follow`` (the default) the stream waits for new events, and
        reconnects with backoff (``retry_delay`` doubling up to
        ``max_retry_delay`` seconds) when the daemon restarts or the
        connection breaks, resuming after the last seq it yielded: nothing
        still in the window is lost or repeated. Without it, the iteration
        ends with the latest event.
        """
        return EventStream(self.endpoint, since, follow, retry_delay, max_retry_delay, on_reconnect)

    def diff(self, from_: TurnRef, to: Optional[TurnRef] = None, step: Optional[str] = None,
             stat: bool = False) -> Diff:
        """``GET /v1/diff``: what changed from the start of ``from_`` to its end, the start of ``to``, or ``"now"``.

        ``step`` keeps only one step of ``from_``; ``stat`` leaves out the diff text.
        """
        q = {"from": str(from_)}
        if to is not None:
            q["to"] = str(to)
        if step is not None:
            q["step"] = step
        if stat:
            q["stat"] = "1"
        return Diff.from_wire(self._json("GET", "/v1/diff?" + urlencode(q)))

    def content(self, at: TurnRef, path: str) -> bytes:
        """``GET /v1/content``: the bytes path held when turn ``at`` began.

        NotFoundError if it did not exist then; BadRequestError for a
        directory, a symlink, or a path that leaves the workspace.
        """
        # The path's bytes, percent-encoded: it may hold escaped non-UTF-8 bytes.
        q = urlencode({"at": str(at)}) + "&path=" + path_query(path)
        with open_request(self.endpoint, "GET", "/v1/content?" + q, timeout=self.timeout) as r:
            return r.read()

    cat = content

    def rollback(self, to: TurnRef, dry_run: bool = False, force: bool = False) -> RollbackResult:
        """``POST /v1/rollback``: roll back to before turn ``to``, or (``dry_run``) plan it.

        ``force`` also restores paths changed outside turns since, or by
        processes that are not the agent's. BusyError while a turn is
        open, OutOfWindowError (with ``oldest`` and ``latest``) for a turn
        that left the window. A partial rollback returns
        ``complete=False`` and leaves no marker.
        """
        body: Dict[str, Any] = {"to": to}
        if dry_run:
            body["dry_run"] = True
        if force:
            body["force"] = True
        return RollbackResult.from_wire(self._json("POST", "/v1/rollback", body))

    def rollback_preview(self, to: TurnRef, force: bool = False) -> RollbackResult:
        """The plan of a rollback to before ``to``: what it would do, changing nothing."""
        return self.rollback(to, dry_run=True, force=force)

    def unrevert(self, force: bool = False) -> RollbackResult:
        """``POST /v1/unrevert``: undo the last rollback since the last turn began.

        ConflictError if there is none.
        """
        return RollbackResult.from_wire(self._json("POST", "/v1/unrevert", {"force": True} if force else {}))

    def undo(self, dry_run: bool = False, force: bool = False) -> RollbackResult:
        """Roll back the latest turn not rolled back already, as ``cowfs undo`` does.

        NotFoundError if there is none.
        """
        latest = _latest([t for t in self.turns().turns if t.state != "reverted"])
        if latest is None:
            raise NotFoundError("not_found", "no turn to undo")
        return self.rollback(latest.num, dry_run=dry_run, force=force)

    def markers(self) -> MarkerList:
        """``GET /v1/markers``: the conversation truncation markers, oldest turn first."""
        return MarkerList.from_wire(self._json("GET", "/v1/markers"))

    def purge(self) -> Purged:
        """``DELETE /v1/journal``: stop the daemon and remove the workspace's journal,
        state directory and private directory (its files stay).

        BusyError while a turn is open or processes use the mount.
        """
        return Purged.from_wire(self._json("DELETE", "/v1/journal"))

    def shutdown(self) -> None:
        """``POST /v1/shutdown``: unmount the workspace and stop the daemon."""
        with open_request(self.endpoint, "POST", "/v1/shutdown", {}, self.timeout) as r:
            r.read()


def _latest(turns: Iterable[Turn]) -> Optional[Turn]:
    last = None
    for t in turns:
        last = t
    return last
