"""cowfs: a Python client for the cowfs control socket (docs/api.md).

``Client`` has one method per endpoint, with typed replies (dataclasses)
and typed errors; ``History`` gives a harness undo, redo and revert to a
message in the words of TanStack AI's ``snapshots()``. The standard
library only: HTTP over the daemon's Unix socket with http.client, or
over mutual TLS with ssl to a daemon's listener on another machine.

    import cowfs
    c = cowfs.Client(workspace="/path/to/workspace")
    c.begin_turn(id="turn-1", anchor="msg-1")
    r = cowfs.Client(remote="https://10.0.0.5:7443", tls_dir="/etc/cowfs/client")
"""

from .client import Client
from .errors import (
    BadRequestError,
    BusyError,
    ConflictError,
    ConnectionError,
    CowfsError,
    ForbiddenError,
    ForeignSocketError,
    InternalError,
    NoDaemonError,
    NotFoundError,
    OutOfWindowError,
    TLSError,
)
from .events import EventStream
from .feed import FileChangedEvent
from .history import History, HistoryDiff, HistoryMarker, RewindResult
from .locate import Location, endpoint_for, find_workspace, locate, remote_from_env, socket_for, state_root
from .paths import path_bytes, path_query, path_string
from .remote import Remote, parse_remote
from .transport import check_server
from .types import (
    AgentScope,
    Change,
    Diff,
    DiffFile,
    ErrorBody,
    Event,
    Marker,
    MarkerList,
    OutsideChanges,
    PathAction,
    PrunedEarly,
    Purged,
    Resources,
    RollbackCounts,
    RollbackResult,
    Status,
    Step,
    StepList,
    StepStarted,
    Turn,
    TurnDetail,
    TurnList,
    TurnRef,
)

__version__ = "0.1.0"

__all__ = [
    "AgentScope", "BadRequestError", "BusyError", "Change", "Client", "ConflictError", "ConnectionError",
    "CowfsError", "Diff", "DiffFile", "ErrorBody", "Event", "EventStream", "FileChangedEvent",
    "ForbiddenError", "ForeignSocketError", "History", "HistoryDiff", "HistoryMarker", "InternalError",
    "Location", "Marker", "MarkerList", "NoDaemonError", "NotFoundError", "OutOfWindowError", "OutsideChanges", "PathAction",
    "PrunedEarly", "Purged", "Remote", "Resources", "RewindResult", "RollbackCounts", "RollbackResult", "Status",
    "Step", "StepList", "StepStarted", "TLSError", "Turn", "TurnDetail", "TurnList", "TurnRef", "check_server",
    "endpoint_for", "find_workspace", "locate", "parse_remote", "path_bytes", "path_query", "path_string",
    "remote_from_env", "socket_for", "state_root",
]
