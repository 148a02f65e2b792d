"""The wire types of the control socket, version 1, as dataclasses.

Field names are the JSON names of docs/api.md and ctl/api.go, so a reply
reads the same here, in curl and in the other clients; the one exception
is ``from``, a Python keyword, which is ``from_``. A field the reply may
leave out is ``Optional`` (None when absent); every other field is always
sent. Times are the RFC 3339 strings the daemon sends. Paths are ``str``:
a byte of a name that is not valid UTF-8 arrives as a lone surrogate
``\\udc80``–``\\udcff``, Python's "surrogateescape", so ``open(path)`` and
``os.fsencode(path)`` take it as it is.

Replies are parsed with ``from_wire`` (wire.py), which ignores fields this
client does not know (the API may add fields; ``extra`` keeps them) and
fills a missing required field with its zero value. ``tests/test_contract.py``
checks real replies against these declarations, key by key, so a field
the daemon gains fails there until it is declared here.
"""

from dataclasses import dataclass, field
from typing import Dict, List, Literal, Optional, Union

from .wire import WireObject, wire_field

#: A turn, by number or by the harness's id.
TurnRef = Union[int, str]

TurnState = Literal["open", "closed", "reverted"]
ChangeKind = Literal["created", "modified", "deleted", "renamed", "metadata"]
EventKind = Literal["created", "modified", "deleted", "moved", "metadata", "restored", "recovered"]
FileType = Literal["file", "dir", "symlink", "fifo", "socket", "char", "block"]
RollbackAction = Literal["restore", "recover", "delete", "skip"]
PruneReason = Literal["window", "max_journal_size", "disk_full"]
EventType = Literal["change", "turn_begin", "turn_end", "step", "rollback", "unrevert",
                    "turn_pruned", "gap", "journal_error"]


@dataclass
class AgentScope(WireObject):
    """The processes that are a turn's agent: a process is the agent's if any entry holds it.

    A change another process makes during the turn (a person's editor, a
    second tool) is journaled but not the turn's: it carries
    ``agent=False``, and rollbacks leave it (unless forced) and skip the
    turn's changes to the same paths.
    """

    #: Processes whose filesystem uid is one of these.
    uids: Optional[List[int]] = None
    #: These processes and their descendants (followed across fork, exec and re-parenting); each must be running.
    pids: Optional[List[int]] = None
    #: Processes in these cgroup v2 cgroups or beneath them; each must exist.
    cgroups: Optional[List[str]] = None


@dataclass
class Turn(WireObject):
    """One turn."""

    #: 1, 2, 3 … never reused.
    num: int
    state: TurnState
    began_at: str
    #: Paths with a net change by the turn's agent.
    changed_paths: int
    #: Journal records.
    records: int
    #: Bytes the turn added to the journal.
    journal_bytes: int
    #: The harness's id.
    id: Optional[str] = None
    #: The conversation anchor (the user message's id).
    anchor: Optional[str] = None
    ended_at: Optional[str] = None
    #: Paths processes outside the turn's agent scope changed during it.
    not_agent_paths: Optional[int] = None
    #: The turn's agent scope; None if every process is its agent.
    agent: Optional[AgentScope] = None


@dataclass
class PrunedEarly(WireObject):
    """When turns last left the window before their time."""

    #: The newest turn that left.
    through: int
    #: ``max_journal_size`` or ``disk_full``.
    reason: PruneReason
    time: str


@dataclass
class TurnList(WireObject):
    """The body of ``GET /v1/turns``."""

    #: Oldest first.
    turns: List[Turn]
    #: Paths changed through the mount while no turn was open, in the window.
    outside_turns: int
    pruned_early: Optional[PrunedEarly] = None


@dataclass
class Resources(WireObject):
    """What the daemon process holds."""

    goroutines: int
    open_files: int
    rss_bytes: int
    #: The peak since the daemon started.
    max_rss_bytes: int


@dataclass
class Change(WireObject):
    """The net effect of a turn on one path."""

    #: Relative to the workspace root.
    path: str
    kind: ChangeKind
    type: FileType
    #: The pre-image kept for the path: what a rollback would put back.
    bytes: int
    #: The process that made the first change (0: a kernel flush no process maps any more).
    pid: int
    uid: int
    command: str
    time: str
    #: For ``renamed``: where it was (JSON ``from``).
    from_: Optional[str] = wire_field("from", default=None)
    #: The step (tool call) the first change was made in.
    step: Optional[str] = None
    #: Made (at least partly) outside the mount; a rollback leaves it alone unless forced.
    outside: Optional[bool] = None
    #: False: made by a process outside the turn's agent scope, not the turn's. None: the agent's.
    agent: Optional[bool] = None
    #: The process's command line (``/proc/PID/cmdline``): arguments joined by spaces, non-printable
    #: characters and bytes that are not UTF-8 escaped as ``\xNN``, at most 256 bytes, ending in "…"
    #: if cut. None if it could not be read, or journaled before cowfs kept command lines.
    command_line: Optional[str] = None


@dataclass
class TurnDetail(Turn):
    """The body of ``GET /v1/turns/{ref}``: a turn and its changes, sorted by path."""

    changes: List[Change] = field(default_factory=list)


@dataclass
class Step(WireObject):
    """One step (tool call) of a turn and what it changed."""

    #: The step's id; "" for the changes made before the turn's first step.
    id: str
    changed_paths: int
    #: The step's own net changes, by path: a path two steps changed is under each.
    changes: List[Change] = field(default_factory=list)
    #: What the step is (the tool's name), if the harness said.
    name: Optional[str] = None
    #: When it began (None for id "").
    began_at: Optional[str] = None
    not_agent_paths: Optional[int] = None


@dataclass
class StepList(WireObject):
    """The body of ``GET /v1/turns/{ref}/steps``: a turn's steps in the order they began."""

    turn: int
    steps: List[Step] = field(default_factory=list)


@dataclass
class OutsideChanges(WireObject):
    """The body of ``GET /v1/outside``: the changes made while no turn was open, sorted by path."""

    changes: List[Change] = field(default_factory=list)


@dataclass
class Status(WireObject):
    """The body of ``GET /v1/status``."""

    version: str
    #: The backing directory.
    workspace: str
    #: Where the view is mounted.
    mountpoint: str
    journal: str
    socket: str
    #: The daemon's pid.
    pid: int
    started_at: str
    #: Turns kept.
    window: int
    #: Whether commits are fsynced.
    sync: bool
    #: Turns in the window.
    turns: int
    journal_bytes: int
    content_bytes: int
    free_bytes: int
    #: ``--max-journal-size``; 0: none.
    max_journal_bytes: int
    #: Rollbacks since the last turn began; the latest can be unreverted.
    unrevertable: int
    resources: Resources
    open_turn: Optional[Turn] = None
    #: The ``https://HOST:PORT`` the API is also served at over mutual TLS
    #: (``--listen``), its port resolved; absent without one.
    listen: Optional[str] = None
    #: With ``latest_turn``, the range a rollback can reach.
    oldest_turn: Optional[int] = None
    latest_turn: Optional[int] = None
    pruned_early: Optional[PrunedEarly] = None
    #: Why the journal became unusable.
    journal_error: Optional[str] = None
    #: Why the latest rescan stat'ed every tracked path rather than only
    #: what the kernel reported changed; absent when it did not.
    full_scan: Optional[str] = None
    #: FUSE requests served since the mount started, by operation.
    fuse_requests: Optional[Dict[str, int]] = None


@dataclass
class PathAction(WireObject):
    """What a rollback does (or, dry, would do) to one path."""

    path: str
    action: RollbackAction
    type: FileType
    reason: Optional[str] = None
    #: A rename undone: the object recovered at ``path`` comes from here (JSON ``from``).
    from_: Optional[str] = wire_field("from", default=None)
    #: A rename undone: the object deleted from ``path`` moves here.
    to: Optional[str] = None
    #: What else happened to a path the rollback restored (a refused writeback of a shared mapping).
    note: Optional[str] = None
    #: An earlier rollback skipped changes to this path and this one, the cause gone, undid them.
    retried: Optional[bool] = None


@dataclass
class RollbackCounts(WireObject):
    """A rollback's paths summed."""

    restored: int
    recovered: int
    deleted: int
    skipped: int
    dirs_removed: int
    dirs_recreated: int


@dataclass
class Marker(WireObject):
    """Where the harness truncates its conversation after a rollback: at ``anchor``."""

    #: The turn rolled back to before.
    turn: int
    created_at: str
    #: At most 160 characters for the model: later messages were removed and the files restored.
    note: str
    id: Optional[str] = None
    anchor: Optional[str] = None
    #: The markers this one superseded, oldest turn first.
    replaces: Optional[List["Marker"]] = None


@dataclass
class RollbackResult(WireObject):
    """The reply to a rollback or an unrevert."""

    #: The turn rolled back to before (for an unrevert: the turn the undone rollback went back to).
    target: int
    #: Sorted by path.
    paths: List[PathAction]
    counts: RollbackCounts
    #: False for a partial rollback: no marker, no turn reverted; ``failure`` says what failed.
    complete: bool
    dry_run: Optional[bool] = None
    unrevert: Optional[bool] = None
    #: The rollback's id (None in a dry run).
    rollback: Optional[int] = None
    #: None in a dry run, an unrevert and a partial rollback.
    marker: Optional[Marker] = None
    failure: Optional[str] = None


@dataclass
class MarkerList(WireObject):
    """The body of ``GET /v1/markers``."""

    #: Oldest turn first.
    markers: List[Marker]


@dataclass
class StepStarted(WireObject):
    """The reply to a step."""

    turn: int
    id: str
    name: Optional[str] = None


@dataclass
class Event(WireObject):
    """One line of ``GET /v1/events``. Which fields are set depends on ``type``."""

    #: Orders events; resume after it.
    seq: int
    time: str
    type: EventType
    #: The turn the event happened in (None: outside a turn).
    turn: Optional[int] = None
    step: Optional[str] = None
    # change: one event per journaled change, not netted.
    path: Optional[str] = None
    kind: Optional[EventKind] = None
    from_: Optional[str] = wire_field("from", default=None)
    bytes: Optional[int] = None
    pid: Optional[int] = None
    uid: Optional[int] = None
    command: Optional[str] = None
    #: As in Change.
    command_line: Optional[str] = None
    outside: Optional[bool] = None
    agent: Optional[bool] = None
    # turn_begin; turn_pruned (id).
    id: Optional[str] = None
    anchor: Optional[str] = None
    #: step: its name, if it was given one.
    name: Optional[str] = None
    # rollback, unrevert; and a change a rollback or an unrevert made.
    rollback: Optional[int] = None
    target: Optional[int] = None
    counts: Optional[RollbackCounts] = None
    marker: Optional[Marker] = None
    failure: Optional[str] = None
    # turn_pruned.
    reason: Optional[PruneReason] = None
    # journal_error.
    message: Optional[str] = None


@dataclass
class DiffFile(WireObject):
    """One changed file in a diff."""

    path: str
    status: Literal["created", "modified", "deleted", "renamed", "metadata"]
    #: Lines.
    added: int
    removed: int
    #: Renamed: the old path (JSON ``from``).
    from_: Optional[str] = wire_field("from", default=None)
    #: Named, not diffed.
    binary: Optional[bool] = None
    #: Over 1 MiB: named, not diffed.
    too_large: Optional[bool] = None
    #: The unified diff.
    diff: Optional[str] = None
    #: Why there is no diff of a changed path (a symlink's target, a directory).
    note: Optional[str] = None
    agent: Optional[bool] = None


@dataclass
class Diff(WireObject):
    """The body of ``GET /v1/diff``."""

    #: "turn 3", "turn 3 step call_1" (JSON ``from``).
    from_: str = wire_field("from")
    #: "end of turn 3", "turn 5", "now".
    to: str = ""
    files: List[DiffFile] = field(default_factory=list)


@dataclass
class Purged(WireObject):
    """The body of ``DELETE /v1/journal``: what the daemon removed, in order."""

    removed: List[str]


@dataclass
class ErrorBody(WireObject):
    """The body of every error reply, as ``{"error": ErrorBody}``."""

    code: str
    message: str
    oldest: Optional[int] = None
    latest: Optional[int] = None


#: Every reply type, by name (the TypeScript client's names).
REPLY_TYPES: Dict[str, type] = {
    c.__name__: c
    for c in (Turn, TurnList, TurnDetail, StepList, OutsideChanges, Status, RollbackResult, MarkerList,
              StepStarted, Event, Diff, Purged, ErrorBody)
}
