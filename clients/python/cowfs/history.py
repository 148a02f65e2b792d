"""History: undo, redo and revert-to-a-message in the snapshots() words.

The vocabulary is that of TanStack AI's git-shadow ``snapshots()`` plugin,
as the TypeScript client's History has it — begin_turn, step, end_turn,
undo, redo, revert, unrevert, diff, on_file_changed, markers,
purge_snapshots — on top of a cowfs daemon. A turn is one user message and
the agent's answer; its anchor is that message's id, so every rewind says
where the harness truncates (or, redoing, restores) its conversation. The
file changes it reports come from feed.py, on a thread of their own.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

from .client import Client
from .errors import BadRequestError, ConflictError, NotFoundError
from .feed import ChangeFeed, FileChangedEvent
from .types import AgentScope, DiffFile, Marker, PathAction, RollbackCounts, RollbackResult, Turn, TurnRef


@dataclass
class HistoryMarker:
    """A conversation truncation marker."""

    #: The turn rolled back to before.
    turn: int
    #: A line for the model: later messages were removed and the files restored.
    note: str
    created_at: str
    turn_id: Optional[str] = None
    #: Truncate the conversation here: this message and everything after it go.
    message_id: Optional[str] = None


@dataclass
class RewindResult:
    """What undo(), redo(), revert() and unrevert() did."""

    #: ``undo``, ``redo``, ``revert`` or ``unrevert``.
    action: str
    #: The turn rolled back to before (for redo and unrevert: the turn the undone rollback went back to).
    turn: int
    #: Files put back as they were: restored, recovered and deleted (not directories, not skips).
    files_restored: int
    counts: RollbackCounts
    #: Every path with what was done to it.
    paths: List[PathAction]
    #: Paths left alone (changed outside a turn since, say), each with its reason; force restores them.
    skipped: List[PathAction]
    #: True for a plan (dry_run): nothing was changed.
    dry_run: bool
    #: False if a step failed for a reason other than a conflict (``failure`` says what): a
    #: partial rollback leaves no marker, so keep the conversation as it is.
    complete: bool
    #: The daemon's replies, one per rollback or unrevert made.
    results: List[RollbackResult] = field(default_factory=list)
    turn_id: Optional[str] = None
    #: That turn's anchor. After undo and revert, the conversation now ends just before this
    #: message; after redo and unrevert, it names the message the undone rollback went back to.
    message_id: Optional[str] = None
    #: After undo and revert: the marker left (message_id and a note for the model).
    marker: Optional[HistoryMarker] = None
    failure: Optional[str] = None


@dataclass
class HistoryDiff:
    """history.diff()'s result."""

    #: "turn 3", "turn 3 step call_1"
    from_: str
    #: "end of turn 3", "turn 5", "now", "end of the step"
    to: str
    files: List[DiffFile]
    #: The unified diffs of all text files, one after another.
    patch: str


class History:
    """The history of a mounted workspace, for a harness that owns its agent loop.

    Open it with ``History.open(workspace=…)`` (or ``socket=``, or
    ``remote=`` and ``tls_dir=``, or ``client=``); close() it, or use it as
    a context manager.
    """

    def __init__(self, client: Client, feed: ChangeFeed):
        #: The client underneath, for everything else the API offers.
        self.client = client
        self._feed = feed

    @classmethod
    def open(cls, workspace: Optional[str] = None, socket: Optional[str] = None,
             client: Optional[Client] = None, since: Optional[int] = None,
             event_wait: float = 10.0, remote: Optional[str] = None,
             tls_dir: Optional[str] = None) -> "History":
        """Opens the history of a mounted workspace and starts following its events.

        ``since``: report events after this seq (default: from now on).
        ``event_wait``: how long end_turn() and rewinds wait for their
        event to reach the listeners, in seconds.
        """
        if client is None:
            if socket is not None or remote is not None:
                client = Client(socket=socket, remote=remote, tls_dir=tls_dir)
            else:
                client = Client(workspace=workspace)
        status = client.status()
        turns = client.turns()
        if since is None:
            since = _latest_seq(client)
        feed = ChangeFeed(client.events(since=since), status.pid, event_wait)
        for t in turns.turns:
            feed.turn_began(t.num, t.anchor)
        return cls(client, feed)

    def __enter__(self) -> "History":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def stream_error(self) -> Optional[BaseException]:
        """Why the event stream stopped, if it did (on_file_changed then reports nothing more)."""
        return self._feed.stream_error

    def close(self) -> None:
        """Stops following events."""
        self._feed.close()

    def begin_turn(self, id: Optional[str] = None, anchor: Optional[str] = None,
                   agent: Optional[Union[AgentScope, Dict[str, Any]]] = None) -> Turn:
        """A user message arrived: begin its turn.

        ``anchor`` is the message's id; ``id`` the harness's own turn id, if
        any; ``agent`` the processes that are the agent (absent: the
        daemon's default).
        """
        turn = self.client.begin_turn(id=id, anchor=anchor, agent=agent)
        self._feed.turn_began(turn.num, turn.anchor)
        return turn

    def step(self, id: str, tool_call_ids: Optional[List[str]] = None) -> None:
        """A model step begins, with the tool calls it asked for.

        Changes from here on carry the step (and, if it has one tool call,
        that call).
        """
        self.client.begin_step(id)
        self._feed.step_began(id, list(tool_call_ids or []))

    def tool_call(self, tool_call_id: str) -> None:
        """One tool call of the current model step starts running.

        Changes from here on carry its id exactly, also when the step has
        several (tool calls must run one after another for this).
        """
        self.client.begin_step(tool_call_id)
        self._feed.tool_call_began(tool_call_id)

    def end_turn(self) -> Turn:
        """The agent's answer is complete: end the turn.

        Returns once its file changes reached the listeners.
        """
        turn = self.client.end_turn()
        self._feed.turn_ended(turn.num)
        return turn

    def undo(self, force: bool = False, dry_run: bool = False) -> RewindResult:
        """Roll back the latest turn not rolled back already. NotFoundError if there is none."""
        live = [t for t in self.client.turns().turns if t.state != "reverted"]
        if not live:
            raise NotFoundError("not_found", "no turn to undo")
        return self._rollback("undo", live[-1].num, force, dry_run)

    def redo(self, force: bool = False) -> RewindResult:
        """Undo the last undo (or revert). ConflictError if there is none since the last turn began."""
        return self._rewind_result("redo", [self._unrevert_once("redo", force)])

    def revert(self, message_id: str, force: bool = False, dry_run: bool = False) -> RewindResult:
        """Roll back to before the turn that message started (the latest turn anchored at it).

        NotFoundError if no turn in the window is.
        """
        anchored = [t for t in self.client.turns().turns if t.anchor == message_id]
        if not anchored:
            raise NotFoundError("not_found", f"no turn in the window is anchored at message {message_id}")
        return self._rollback("revert", anchored[-1].num, force, dry_run)

    def unrevert(self, force: bool = False) -> RewindResult:
        """Undo every undo and revert since the last turn began.

        The workspace is as it was before the first of them. ConflictError
        if there is none.
        """
        results: List[RollbackResult] = []
        while self.client.status().unrevertable > 0:
            results.append(self._unrevert_once("unrevert", force))
        if not results:
            raise ConflictError("conflict", "nothing to unrevert")
        return self._rewind_result("unrevert", results)

    def diff(self, from_: TurnRef, to: Optional[TurnRef] = None, step: Optional[str] = None,
             stat: bool = False) -> HistoryDiff:
        """What changed from the start of ``from_`` to its end, or to the start of ``to``, or to ``"now"``.

        With ``step``, what one step (a tool call) of ``from_`` changed:
        ``diff(e.message_id, step=e.tool_call_id)`` for a FileChangedEvent
        ``e``. A string names a message (the turn anchored at it) or,
        failing that, a turn id; a number is a turn number.
        """
        if to is not None and step is not None:
            # The daemon ends a step's diff at the step's last change.
            raise BadRequestError("bad_request", "a step's diff ends where the step ends: leave out to")
        f = self._resolve(from_)
        t = None if to is None else self._resolve(to)
        d = self.client.diff(f, to=t, step=step, stat=stat)
        return HistoryDiff(from_=d.from_, to=d.to, files=d.files, patch="".join(x.diff or "" for x in d.files))

    def on_file_changed(self, cb: Callable[[FileChangedEvent], None]) -> Callable[[], None]:
        """Calls cb (on the feed's thread) for each file change from now on; returns a function that stops it."""
        return self._feed.listen(cb)

    def markers(self) -> List[HistoryMarker]:
        """The markers left by rewinds, oldest turn first."""
        return [_marker_of(m) for m in self.client.markers().markers]

    def purge_snapshots(self) -> List[str]:
        """Throw the workspace's history away (TanStack's purgeSnapshots).

        The daemon stops and removes its journal, state and private
        directory; the files stay. Events stop. BusyError while a turn is
        open or processes use the mount. Returns the paths removed.
        """
        removed = self.client.purge().removed
        self._feed.close()
        return removed

    def _rollback(self, cause: str, to: int, force: bool, dry_run: bool) -> RewindResult:
        def call() -> RollbackResult:
            return self.client.rollback(to, dry_run=dry_run, force=force)

        # A dry run changes nothing and leaves no event to wait for.
        res = call() if dry_run else self._feed.track("rollback", cause, call)
        return self._rewind_result(cause, [res])

    def _unrevert_once(self, cause: str, force: bool) -> RollbackResult:
        return self._feed.track("unrevert", cause, lambda: self.client.unrevert(force=force))

    def _rewind_result(self, action: str, results: List[RollbackResult]) -> RewindResult:
        names = ("restored", "recovered", "deleted", "skipped", "dirs_removed", "dirs_recreated")
        sums = {k: sum(getattr(r.counts, k) for r in results) for k in names}
        counts = RollbackCounts(**sums)
        # Unreverts go back newest first: the last one names the earliest point.
        last = results[-1]
        paths = [p for r in results for p in r.paths]
        turn_id = last.marker.id if last.marker else None
        message_id = last.marker.anchor if last.marker else None
        if last.marker is None:
            t = next((x for x in self.client.turns().turns if x.num == last.target), None)
            turn_id = t.id if t else None
            message_id = t.anchor if t and t.anchor is not None else self._feed.anchor_of(last.target)
        return RewindResult(
            action=action,
            turn=last.target,
            turn_id=turn_id,
            message_id=message_id,
            marker=_marker_of(last.marker) if last.marker else None,
            files_restored=counts.restored + counts.recovered + counts.deleted,
            counts=counts,
            paths=paths,
            skipped=[p for p in paths if p.action == "skip"],
            dry_run=last.dry_run is True,
            complete=all(r.complete is not False for r in results),
            failure=next((r.failure for r in results if r.failure is not None), None),
            results=results,
        )

    def _resolve(self, ref: TurnRef) -> TurnRef:
        """A diff's turn: a message id's turn, else the string itself (a turn id), or the number."""
        if isinstance(ref, int) or ref == "now":
            return ref
        anchored = [t for t in self.client.turns().turns if t.anchor == ref]
        return anchored[-1].num if anchored else ref


def _latest_seq(client: Client) -> int:
    """The seq of the latest event, read from the stream without following it."""
    stream = client.events(follow=False)
    for _ in stream:
        pass
    return stream.last_seq


def _marker_of(m: Marker) -> HistoryMarker:
    return HistoryMarker(turn=m.turn, turn_id=m.id, message_id=m.anchor, note=m.note, created_at=m.created_at)
