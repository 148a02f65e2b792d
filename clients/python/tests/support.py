"""Shared by the tests: a TestCase with a mounted workspace per class, and waiting."""

import threading
import time
import unittest
from typing import Callable, Dict, List, Optional

from cowfs import Event, EventStream
from cowfs.testing import TestWorkspace, fuse_skip

#: Why FUSE tests cannot run here (None: they can); raises under COWFS_TEST_DISALLOW_SKIP.
SKIP = fuse_skip()


def until(cond: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Waits until cond holds (polling), failing after timeout seconds."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def workspace(case: "type[unittest.TestCase]", seed: Optional[Dict[str, str]] = None,
              flags: Optional[List[str]] = None, name: str = "ws") -> TestWorkspace:
    """A mounted workspace for a TestCase class, cleaned up (and checked) after it."""
    w = TestWorkspace.create(name=name, seed=seed, flags=flags)
    case.addClassCleanup(lambda: _cleanup(w))
    return w


def _cleanup(w: TestWorkspace) -> None:
    forced = w.cleanup()
    if forced:
        raise AssertionError(f"cleanup had to force: {forced}")


@unittest.skipIf(SKIP, SKIP or "")
class FuseCase(unittest.TestCase):
    """A test case that needs root and /dev/fuse."""


def follow_in_thread(stream: EventStream, stop_after_turn_ends: int):
    """Iterates stream on a thread until that many turn_end events; returns (seen, thread)."""
    seen: List[Event] = []

    def run() -> None:
        ends = 0
        for e in stream:
            seen.append(e)
            if e.type == "turn_end":
                ends += 1
                if ends == stop_after_turn_ends:
                    return

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return seen, t
