"""The event stream as an iterator that survives the daemon going away.

``GET /v1/events?since=SEQ&follow=1`` sends every event after SEQ and then
stays open; it ends when the daemon stops. The iterator remembers the
last seq it yielded, and when the stream ends or breaks (or the daemon is
not there yet) it connects again, with backoff, asking for the events
after that seq: nothing still in the window is lost, and since seq only
grows (the journal keeps it across restarts), an event at or below the
last yielded seq is a repeat and is dropped. The same holds over a
remote's TLS connection, which breaks and is reopened as a socket's is; a
TLSError (the daemon refused this client's certificate, or its own did
not verify) ends the iteration instead, since trying again would only be
refused again. This is the TypeScript client's events.ts, blocking
instead of async.

A daemon on its way out may still accept a connection after it closed its
journal, and answer it with an internal error; following, that is retried
like a daemon that is not there, up to MAX_INTERNAL_RETRIES times in a row
(an error that stays is raised).
"""

import http.client
import json
import socket
import threading
from typing import Callable, Iterator, Optional

from .errors import ConnectionError, InternalError, NoDaemonError
from .transport import Endpoint, Response, connection, open_request
from .types import Event

#: Internal errors in a row on opening the stream that a following stream
#: retries: with the default backoff, some seconds, longer than a daemon
#: takes from closing its journal to removing its socket.
MAX_INTERNAL_RETRIES = 8

#: Called with (since, error) each time the stream is lost and will be reopened after since.
ReconnectHook = Callable[[int, Optional[BaseException]], None]


class EventStream:
    """An iterable of events that knows the last seq it yielded.

    Iterate it once (``for e in stream``). With ``follow`` it waits for new
    events and reconnects when the daemon restarts; ``close()``, from any
    thread, ends the iteration quietly, as does leaving the loop.
    """

    def __init__(self, socket: Endpoint, since: int = 0, follow: bool = True,
                 retry_delay: float = 0.05, max_retry_delay: float = 2.0,
                 on_reconnect: Optional[ReconnectHook] = None):
        #: The daemon's socket, or its remote (remote.py).
        self.endpoint = socket
        self.follow = follow
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.on_reconnect = on_reconnect
        self._last_seq = since
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._conn: Optional[http.client.HTTPConnection] = None

    @property
    def last_seq(self) -> int:
        """The seq of the last event yielded (or ``since``, before any)."""
        return self._last_seq

    @property
    def closed(self) -> bool:
        return self._stop.is_set()

    def close(self) -> None:
        """Ends the iteration: a wait for the next event returns at once."""
        self._stop.set()
        with self._lock:
            if self._conn is not None and self._conn.sock is not None:
                try:
                    self._conn.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Event]:
        delay = self.retry_delay
        internal = 0
        while not self._stop.is_set():
            lost: Optional[BaseException] = None
            try:
                q = f"since={self._last_seq}" + ("&follow=1" if self.follow else "")
                conn = connection(self.endpoint)
                conn.connect()
                # Registered before the request: the daemon sends the reply's
                # head only with the first event, and close() must be able to
                # break the wait for it.
                with self._lock:
                    if self._stop.is_set():
                        conn.close()
                        return
                    self._conn = conn
                try:
                    resp = open_request(self.endpoint, "GET", f"/v1/events?{q}", conn=conn)
                    delay = self.retry_delay
                    internal = 0
                    try:
                        for line in _lines(resp):
                            e = Event.from_wire(json.loads(line))
                            if e.type == "gap":
                                # Events up to e.seq left the window before we could see them.
                                self._last_seq = max(self._last_seq, e.seq)
                                yield e
                            elif e.type == "journal_error":
                                # The journal is unusable until the daemon restarts on a usable
                                # one; reconnecting would only repeat this.
                                yield e
                                return
                            elif e.seq > self._last_seq:
                                self._last_seq = e.seq
                                yield e
                            # else: seen before a reconnect.
                    finally:
                        resp.close()
                finally:
                    with self._lock:
                        self._conn = None
                    conn.close()
            except InternalError as err:
                if self._stop.is_set():
                    return
                internal += 1
                if not self.follow or internal > MAX_INTERNAL_RETRIES:
                    raise
                lost = err
            except (NoDaemonError, ConnectionError, OSError, http.client.HTTPException) as err:
                if self._stop.is_set():
                    return
                if not self.follow:
                    raise
                lost = err
            if not self.follow or self._stop.is_set():
                return
            # The stream ended (the daemon stopped) or could not be opened.
            if self.on_reconnect is not None:
                self.on_reconnect(self._last_seq, lost)
            if self._stop.wait(delay):
                return
            delay = min(delay * 2, self.max_retry_delay)


def _lines(resp: Response) -> Iterator[bytes]:
    """A reply's lines; a partial last line is dropped (the stream broke mid-event)."""
    while True:
        line = resp.http.readline()
        if not line:
            return
        if not line.endswith(b"\n"):
            return
        if line.strip():
            yield line
