"""A turn's agent scope through the client: a change made during the turn by
a process outside it carries agent=False in the turn, the events and the
diff, and a rollback of the turn leaves it."""

import os
import subprocess
import unittest

from cowfs import AgentScope
from support import FuseCase, workspace


class TestAgentScope(FuseCase):
    @classmethod
    def setUpClass(cls):
        cls.w = workspace(cls, seed={"shared.txt": "old\n"})

    def test_1_marks_the_persons_change_and_keeps_it_through_a_rollback(self):
        c = self.w.client()
        # The agent: a shell that writes a.txt once told to.
        agent = subprocess.Popen(["sh", "-c", "read go; echo agent > a.txt; echo done"], cwd=self.w.dir,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            t = c.begin_turn(agent=AgentScope(pids=[agent.pid]))
            self.assertEqual(t.agent, AgentScope(pids=[agent.pid]))
            agent.stdin.write("go\n")
            agent.stdin.flush()
            self.assertEqual(agent.stdout.readline(), "done\n")
            with open(self.w.path("shared.txt"), "w") as f:  # this process: not the agent
                f.write("the person's\n")
            ended = c.end_turn()
            self.assertEqual((ended.changed_paths, ended.not_agent_paths), (1, 1))
        finally:
            agent.kill()
            agent.wait()
            agent.stdin.close()
            agent.stdout.close()

        by_path = {ch.path: ch for ch in c.turn(t.num).changes}
        self.assertIsNone(by_path["a.txt"].agent)
        self.assertIs(by_path["shared.txt"].agent, False)
        self.assertEqual(by_path["shared.txt"].pid, os.getpid())

        changes = [e for e in c.events(follow=False) if e.type == "change"]
        self.assertTrue(any(e.path == "shared.txt" and e.agent is False and e.pid == os.getpid() for e in changes))
        self.assertTrue(all(e.path != "a.txt" or e.agent is None for e in changes))

        d = {f.path: f for f in c.diff(t.num).files}
        self.assertIs(d["shared.txt"].agent, False)
        self.assertIsNone(d["a.txt"].agent)

        res = c.rollback(t.num)
        actions = {p.path: p.action for p in res.paths}
        self.assertEqual((actions["a.txt"], actions["shared.txt"]), ("delete", "skip"))
        with open(self.w.path("shared.txt")) as f:
            self.assertEqual(f.read(), "the person's\n")

    def test_2_agent_as_a_dict_too(self):
        c = self.w.client()
        t = c.begin_turn(agent={"uids": [0]})
        self.assertEqual(t.agent, AgentScope(uids=[0]))
        c.end_turn()


if __name__ == "__main__":
    unittest.main()
