"""The file-change feed behind History.on_file_changed.

One event stream (``GET /v1/events?follow=1``) runs on a thread of its own
from History.open() to close(). Every change made through the mount, by
any process, arrives there before it reaches the workspace, tagged with
the cowfs step it happened in; the feed maps steps back to the model step
and tool call the harness marked. A rollback or an unrevert puts one
change event per path it touched in the stream (with its rollback id, no
process), then its own event: the feed holds those changes until that
event, to tell which rewind History made them with (undo, redo, revert,
unrevert; a rewind made elsewhere is a revert or an unrevert), and emits
them then, so listeners see every change in the order it happened.
Listeners run on the feed's thread.

Waiting: end_turn() and the rewinds return once the feed has handled
their turn_end (or rollback) event, so every FileChangedEvent of the
turn, or of the rewind, has reached the listeners by then. If the event
does not come within event_wait seconds (the stream is down), they return
anyway. This is the TypeScript client's feed.ts, with threads.
"""

import logging
import threading
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from .events import EventStream
from .types import Event, RollbackResult

log = logging.getLogger("cowfs")


@dataclass
class FileChangedEvent:
    """One change to a workspace file, as on_file_changed reports it."""

    #: ``created``, ``updated``, ``deleted`` or ``moved``: the snapshots() vocabulary.
    change: str
    #: Relative to the workspace root; for ``moved``, the new path.
    path: str
    #: The process that made it; for a rewind, the daemon. 0: a kernel flush of a mapping no process holds.
    pid: int
    #: Its command; ``cowfs`` for a rewind.
    command: str
    #: For ``moved``: the old path.
    from_: Optional[str] = None
    #: The tool call that made it, when the harness marked it (tool_call()) or its model step had one tool call.
    tool_call_id: Optional[str] = None
    #: The model step it happened in (step()'s id).
    step_id: Optional[str] = None
    #: The turn it happened in; None outside a turn.
    turn: Optional[int] = None
    #: The anchor (user message id) of that turn.
    message_id: Optional[str] = None
    #: cowfs's own word: created, modified, deleted, moved or metadata; for a rewind restored, recovered, deleted or moved.
    kind: Optional[str] = None
    #: The event's seq in the daemon's stream.
    seq: Optional[int] = None
    #: Set when a rewind made the change: ``undo``, ``redo``, ``revert`` or ``unrevert``.
    cause: Optional[str] = None


Listener = Callable[[FileChangedEvent], None]


class _Pending:
    """A rewind in flight, waiting for its event in the stream."""

    def __init__(self, type_: str, cause: str):
        self.type = type_
        self.cause = cause
        self.replied = threading.Event()
        self.reply: Optional[RollbackResult] = None
        self.delivered = threading.Event()


class _Waiter:
    def __init__(self, match: Callable[[Event], bool]):
        self.match = match
        self.done = threading.Event()


class ChangeFeed:
    """Follows a client's events after ``since`` on a thread; see the module comment."""

    def __init__(self, stream: EventStream, daemon_pid: int, event_wait: float):
        self.daemon_pid = daemon_pid
        self.event_wait = event_wait
        #: Why the event stream stopped, if it did (listeners then hear nothing more).
        self.stream_error: Optional[BaseException] = None
        self._stream = stream
        self._lock = threading.Lock()
        self._listeners: List[Listener] = []
        #: Anchors of the turns seen, by number.
        self._anchors: Dict[int, Optional[str]] = {}
        #: Model steps marked: step id → its tool-call ids.
        self._model_steps: Dict[str, List[str]] = {}
        #: Tool calls marked: tool-call id → its model step id.
        self._tool_calls: Dict[str, Optional[str]] = {}
        self._current_step: Optional[str] = None
        #: The latest turn whose turn_end the stream has handled.
        self._last_ended = 0
        self._pendings: List[_Pending] = []
        #: A rewind's changes, held until its own event says which rewind it was.
        self._rewound: List[Event] = []
        self._waiters: List[_Waiter] = []
        self._thread = threading.Thread(target=self._run, name="cowfs-history-events", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for e in self._stream:
                self._handle(e)
        except Exception as err:  # noqa: BLE001 - reported, not raised, on this thread
            # Lost connections are retried by the stream itself; this is
            # something else (a reply that is not an event): say so, loudly,
            # without taking the harness down.
            if not self._stream.closed:
                self.stream_error = err
                warnings.warn(f"cowfs history: the event stream stopped: {err}", RuntimeWarning)

    def close(self) -> None:
        self._stream.close()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def listen(self, cb: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(cb)

        def stop() -> None:
            with self._lock:
                if cb in self._listeners:
                    self._listeners.remove(cb)

        return stop

    def turn_began(self, num: int, anchor: Optional[str]) -> None:
        """A turn began: its anchor, and no steps yet."""
        with self._lock:
            self._anchors[num] = anchor
            self._model_steps.clear()
            self._tool_calls.clear()
            self._current_step = None

    def anchor_of(self, num: int) -> Optional[str]:
        with self._lock:
            return self._anchors.get(num)

    def step_began(self, id: str, tool_call_ids: List[str]) -> None:
        with self._lock:
            self._model_steps[id] = list(tool_call_ids)
            self._current_step = id

    def tool_call_began(self, tool_call_id: str) -> None:
        with self._lock:
            self._tool_calls[tool_call_id] = self._current_step

    def turn_ended(self, num: int) -> None:
        """Returns once the stream has handled turn num's end (it may have already)."""
        with self._lock:
            if self._last_ended >= num:
                return
            w = _Waiter(lambda e: e.type == "turn_end" and e.turn == num)
            self._waiters.append(w)
        w.done.wait(self.event_wait)
        with self._lock:
            if w in self._waiters:
                self._waiters.remove(w)

    def track(self, type_: str, cause: str, call: Callable[[], RollbackResult]) -> RollbackResult:
        """Makes a rollback or an unrevert with call, and returns its reply once
        the stream has reached its event and the listeners have its changes."""
        p = _Pending(type_, cause)
        # Registered before the call: its event may come before its reply.
        with self._lock:
            self._pendings.append(p)
        try:
            res: Optional[RollbackResult] = None
            try:
                res = call()
            finally:
                p.reply = res
                p.replied.set()
            p.delivered.wait(self.event_wait)
            return res
        finally:
            with self._lock:
                self._pendings.remove(p)

    def _handle(self, e: Event) -> None:
        if e.type == "turn_begin":
            if e.turn is not None:
                with self._lock:
                    self._anchors[e.turn] = e.anchor
        elif e.type == "turn_end":
            with self._lock:
                self._last_ended = max(self._last_ended, e.turn or 0)
        elif e.type == "change":
            if e.rollback is not None:
                self._rewound.append(e)
            else:
                self._emit(self._change_of(e))
        elif e.type in ("rollback", "unrevert"):
            # Its changes came just before. If History made it, its reply
            # names the rewind; the feed waits for the reply, so what
            # follows comes after.
            with self._lock:
                p = next((x for x in self._pendings if x.type == e.type), None)
            res = None
            if p is not None:
                p.replied.wait()
                res = p.reply
            mine = p is not None and res is not None and res.rollback == e.rollback
            cause = p.cause if mine and p is not None else ("revert" if e.type == "rollback" else "unrevert")
            held, self._rewound = self._rewound, []
            for c in held:
                self._emit(FileChangedEvent(
                    change=_file_change_of(c.kind), path=c.path or "", from_=c.from_,
                    pid=self.daemon_pid, command="cowfs", kind=c.kind, seq=c.seq, cause=cause,
                ))
            if mine and p is not None:
                p.delivered.set()
        with self._lock:
            done = [w for w in self._waiters if w.match(e)]
            for w in done:
                self._waiters.remove(w)
        for w in done:
            w.done.set()

    def _change_of(self, e: Event) -> FileChangedEvent:
        tool_call_id: Optional[str] = None
        step_id: Optional[str] = None
        with self._lock:
            s = e.step
            if s is not None:
                if s in self._tool_calls:
                    tool_call_id = s
                    step_id = self._tool_calls[s]
                else:
                    step_id = s
                    ids = self._model_steps.get(s)
                    if ids is not None and len(ids) == 1:
                        tool_call_id = ids[0]
            message_id = None if e.turn is None else self._anchors.get(e.turn)
        return FileChangedEvent(
            change=_file_change_of(e.kind), path=e.path or "", from_=e.from_,
            tool_call_id=tool_call_id, step_id=step_id, turn=e.turn, message_id=message_id,
            pid=e.pid or 0, command=e.command or "", kind=e.kind, seq=e.seq,
        )

    def _emit(self, e: FileChangedEvent) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for cb in listeners:
            try:
                cb(e)
            except Exception:  # noqa: BLE001
                # A listener's bug is the harness's to see, not the stream's to die of.
                log.exception("cowfs history: a file-change listener failed")


def _file_change_of(kind: Optional[str]) -> str:
    if kind in ("created", "recovered"):
        return "created"
    if kind == "deleted":
        return "deleted"
    if kind == "moved":
        return "moved"
    return "updated"  # modified, metadata, restored

