"""The agent loop example against a real daemon on a real mount: its turns,
steps and files, and the rewind that rolls back the files and cuts the
conversation at the marker. test/python.sh runs it."""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

from agent_loop import SCRIPT, Agent, ScriptedModel  # noqa: E402
from cowfs.testing import TestWorkspace, fuse_skip  # noqa: E402

SKIP = fuse_skip()


def tree(root: str) -> dict:
    out = {}
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != ".cowfs")
        for n in names:
            p = os.path.join(d, n)
            with open(p) as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


@unittest.skipIf(SKIP, SKIP or "")
class TestAgentLoop(unittest.TestCase):
    def setUp(self):
        self.w = TestWorkspace.create()
        self.addCleanup(lambda: self.assertEqual(self.w.cleanup(), []))

    def test_turns_steps_rewind_and_marker(self):
        agent = Agent(self.w.dir, ScriptedModel(SCRIPT), client=self.w.client())
        prompts = list(SCRIPT)
        agent.prompt(prompts[0])
        after1 = tree(self.w.dir)
        self.assertEqual(after1, {"app/README": "notes\n", "app/main.py": "print(1)\n"})
        t2 = agent.prompt(prompts[1])
        self.assertEqual((t2.num, t2.id, t2.anchor, t2.state), (2, "turn-2", "msg-2", "closed"))
        agent.prompt(prompts[2])
        self.assertEqual(tree(self.w.dir), {"app/cli.py": "print(1)\n", "app/test_cli.py": "assert True\n"})

        changes = [(c.path, c.kind, c.command, c.step) for c in agent.client.turn("turn-2").changes]
        self.assertEqual(changes, [("app/cli.py", "renamed", "mv", "call-msg-2-1"),
                                   ("app/test_cli.py", "created", "sh", "call-msg-2-2")])

        res = agent.rewind("msg-2")
        self.assertTrue(res.complete)
        self.assertEqual(tree(self.w.dir), after1)
        self.assertEqual(res.marker.anchor, "msg-2")
        self.assertEqual([m.anchor for m in agent.client.markers().markers], ["msg-2"])
        # The conversation ends where turn 1 ended, then the marker's note.
        self.assertEqual([m["role"] for m in agent.conversation], ["user", "assistant", "tool", "assistant", "tool", "assistant", "system"])
        self.assertEqual(agent.conversation[-1]["content"], res.marker.note)
        self.assertNotIn("msg-2", [m.get("id") for m in agent.conversation])

        # The next prompt carries on from there: turn 4, the rollback made final.
        t = agent.prompt("Delete the README.")
        self.assertEqual((t.num, t.anchor), (4, "msg-4"))
        self.assertEqual(tree(self.w.dir), {"app/main.py": "print(1)\n"})

    def test_as_a_command(self):
        env = dict(self.w.env, PYTHONPATH="")
        p = subprocess.run([sys.executable, os.path.join(HERE, "agent_loop.py"), self.w.dir], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("marker: cut the conversation at msg-2 (turn 2)", p.stdout)
        self.assertEqual(tree(self.w.dir), {"app/README": "notes\n", "app/main.py": "print(1)\n"})


if __name__ == "__main__":
    unittest.main()
