"""The contract between the daemon and cowfs/types.py, and between the two clients.

Real replies of every JSON endpoint — status idle and with a turn open,
turns, a turn's changes, steps, diffs, a dry and a real rollback with
renames undone, markers, an unrevert, every event of the session, error
replies and a purge (the session of the TypeScript client's
contract.test.ts) — are compared key by key with the dataclasses
(wire_schema.py): a field the server sends and the types do not declare
fails here, and so does a required field it does not send; each reply also
parses and writes back unchanged. The same replies then go through the
TypeScript client's schema (clients/typescript/test/wire-schema.ts, built
to dist/ by test/node.sh), and the two schemas are compared whole, so the
clients cannot drift apart: both are checked against the same daemon
output.
"""

import json
import os
import shutil
import subprocess
import unittest
from typing import Any, List, Tuple

from cowfs import OutOfWindowError
from cowfs.testing import repository_root
from cowfs.transport import UnixHTTPConnection
from cowfs.types import REPLY_TYPES
from support import FuseCase, workspace
from wire_schema import check_reply, schemas

HERE = os.path.dirname(os.path.abspath(__file__))


def ts_schema_module() -> str:
    """The built TypeScript wire schema: $COWFS_TS_WIRE_SCHEMA, or clients/typescript/dist/test/wire-schema.js."""
    return os.environ.get("COWFS_TS_WIRE_SCHEMA") or os.path.join(
        repository_root(), "clients", "typescript", "dist", "test", "wire-schema.js")


def ts_skip() -> Any:
    """Why the TypeScript schema cannot be used here, or None; raises under COWFS_TEST_DISALLOW_SKIP."""
    why = None
    if shutil.which("node") is None:
        why = "needs node"
    elif not os.path.exists(ts_schema_module()):
        why = f"needs {ts_schema_module()} (test/node.sh builds it: npm run build in clients/typescript)"
    if why and os.environ.get("COWFS_TEST_DISALLOW_SKIP"):
        raise RuntimeError(f"cannot run here: {why}")
    return why


TS_SKIP = ts_skip()


def node(mode: str, stdin: Any = None) -> Any:
    p = subprocess.run(["node", os.path.join(HERE, "ts_schema.mjs"), mode, ts_schema_module()],
                       input=None if stdin is None else json.dumps(stdin), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, check=False)
    if p.returncode != 0:
        raise AssertionError(f"node ts_schema.mjs {mode}: exit {p.returncode}\n{p.stderr}")
    return json.loads(p.stdout)


def raw(socket: str, method: str, target: str, body: Any = None) -> Tuple[int, Any]:
    """A request's status and decoded body, past the client: error replies too."""
    conn = UnixHTTPConnection(socket)
    try:
        payload = None if body is None else json.dumps(body).encode()
        conn.request(method, target, body=payload, headers={"Host": "cowfs"})
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


def events(socket: str) -> List[Any]:
    conn = UnixHTTPConnection(socket)
    try:
        conn.request("GET", "/v1/events?since=0", headers={"Host": "cowfs"})
        return [json.loads(line) for line in conn.getresponse().read().splitlines() if line.strip()]
    finally:
        conn.close()


@unittest.skipIf(TS_SKIP, TS_SKIP or "")
class TestSchemasAgree(unittest.TestCase):
    def test_the_python_and_typescript_types_declare_the_same_replies(self):
        ts = node("schema")
        py = schemas()
        self.assertEqual(sorted(ts), sorted(py))
        for name in ts:
            self.assertEqual(py[name], ts[name], f"{name}: the Python types (first) and the TypeScript types differ")


class TestContract(FuseCase):
    #: Every reply seen, as (type name, decoded JSON), for the TypeScript check.
    replies: List[Tuple[str, Any]] = []

    @classmethod
    def setUpClass(cls):
        cls.w = workspace(cls, seed={"main.go": "one\ntwo\n", "old.txt": "old\n", "gone.txt": "x\n"},
                          flags=["--window", "3"])
        cls.s = cls.w.socket

    def check(self, name: str, value: Any) -> None:
        type(self).replies.append((name, value))
        self.assertEqual(check_reply(name, value), [], f"{name}: {json.dumps(value)[:2000]}")
        if name != "ErrorReply":
            self.assertEqual(REPLY_TYPES[name].from_wire(value).to_wire(), value, f"{name} does not round-trip")

    def ok(self, name: str, method: str, target: str, body: Any = None) -> Any:
        status, value = raw(self.s, method, target, body)
        self.assertLess(status, 300, f"{method} {target}: {status} {value}")
        self.check(name, value)
        return value

    def test_1_status_turns_steps_changes_diffs(self):
        w = self.w
        self.ok("Status", "GET", "/v1/status")
        self.ok("Turn", "POST", "/v1/turns", {"id": "c1", "anchor": "m1"})
        self.ok("Status", "GET", "/v1/status")  # with open_turn
        self.ok("StepStarted", "POST", "/v1/turns/current/steps", {"id": "call_1", "name": "Bash"})
        w.sh("sed -i s/two/TWO/ main.go && mv old.txt new.txt && rm gone.txt && mkdir -p d && "
             "printf 'a\\0b' > d/bin && chmod 600 main.go && ln -s main.go link")
        self.ok("Turn", "POST", "/v1/turns/current/end", {})
        self.ok("TurnList", "GET", "/v1/turns")
        self.ok("TurnDetail", "GET", "/v1/turns/c1")
        self.ok("TurnDetail", "GET", "/v1/turns/c1?step=call_1")
        self.ok("StepList", "GET", "/v1/turns/c1/steps")
        self.ok("OutsideChanges", "GET", "/v1/outside")
        self.ok("Diff", "GET", "/v1/diff?from=c1")
        self.ok("Diff", "GET", "/v1/diff?from=c1&to=now&stat=1")
        self.ok("Diff", "GET", "/v1/diff?from=c1&step=call_1")
        for n, was in [(2, "new"), (3, "new2"), (4, "new3")]:
            c = w.client()
            c.begin_turn(id=f"c{n}", anchor=f"m{n}")
            w.sh(f"echo {n} >> main.go && mv {was}.txt new{n}.txt")
            c.end_turn()
        self.ok("TurnList", "GET", "/v1/turns")
        self.ok("Status", "GET", "/v1/status")  # oldest_turn, latest_turn; fuse_requests

    def test_2_rollbacks_markers_unrevert_events(self):
        self.ok("RollbackResult", "POST", "/v1/rollback", {"to": "c3", "dry_run": True})
        self.ok("RollbackResult", "POST", "/v1/rollback", {"to": "c3"})
        self.ok("MarkerList", "GET", "/v1/markers")
        self.ok("Status", "GET", "/v1/status")  # unrevertable
        self.ok("RollbackResult", "POST", "/v1/unrevert", {})
        evs = events(self.s)
        self.assertGreater(len(evs), 10)
        for e in evs:
            self.check("Event", e)

    def test_3_error_replies_out_of_window_with_its_range(self):
        status, gone = raw(self.s, "POST", "/v1/rollback", {"to": 1})
        self.assertEqual(status, 410)
        self.check("ErrorReply", gone)
        self.assertEqual(gone, {"error": {"code": "out_of_window", "oldest": 2, "latest": 4,
                                          "message": "turn 1 has left the window; turns 2 to 4 can be reached"}})
        with self.assertRaises(OutOfWindowError) as cm:
            self.w.client().rollback(1)
        self.assertEqual((cm.exception.oldest, cm.exception.latest), (2, 4))
        for method, target in [("GET", "/v1/turns/nope"), ("POST", "/v1/turns/current/end"),
                               ("GET", "/v1/diff"), ("PUT", "/v1/status")]:
            status, body = raw(self.s, method, target)
            self.assertGreaterEqual(status, 400, f"{method} {target}")
            self.check("ErrorReply", body)

    def test_4_purge(self):
        self.ok("Purged", "DELETE", "/v1/journal")
        self.assertTrue(self.w.wait_daemon_exit(), "daemon still running after the purge")

    @unittest.skipIf(TS_SKIP, TS_SKIP or "")
    def test_5_the_typescript_types_accept_the_same_replies(self):
        names = {n for n, _ in self.replies}
        self.assertEqual(names, set(schemas()), "the session did not see every reply type")
        self.assertEqual(node("check", self.replies), [])


if __name__ == "__main__":
    unittest.main()
