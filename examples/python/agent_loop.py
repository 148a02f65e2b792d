#!/usr/bin/env python3
"""A minimal agent loop on cowfs, in Python.

Each user prompt begins a turn (its message id is the turn's anchor), each
tool call the "model" asks for is a step (its tool-call id) and runs as a
subprocess in the workspace, and the turn ends with the model's answer.
Then the user rewinds to their second prompt: the workspace is rolled back
to before the turn that prompt began, and the conversation is cut at the
marker's anchor, with the marker's note as a system line for the model.

The model is scripted (ScriptedModel): no API key, no network. Put a real
one behind the same next() and the loop stays as it is.

    cowfs mount --background /tmp/ws
    python3 examples/python/agent_loop.py /tmp/ws
    cowfs umount /tmp/ws
"""

import argparse
import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional

try:
    import cowfs
except ImportError:  # run from a checkout without installing clients/python
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    import cowfs

Message = Dict[str, Any]

#: What the scripted model does for each prompt: tool calls (shell commands), then its answer.
SCRIPT: Dict[str, List[str]] = {
    "Start a notes app.": ["mkdir -p app && printf 'notes\\n' > app/README", "printf 'print(1)\\n' > app/main.py"],
    "Rename main.py to cli.py and add a test.": ["mv app/main.py app/cli.py", "printf 'assert True\\n' > app/test_cli.py"],
    "Delete the README.": ["rm app/README"],
}


class ScriptedModel:
    """Stands in for a model: answers a conversation with the next tool call of its script, or its final answer."""

    def __init__(self, script: Dict[str, List[str]]):
        self.script = script

    def next(self, conversation: List[Message]) -> Message:
        prompt_at = max(i for i, m in enumerate(conversation) if m["role"] == "user")
        prompt = conversation[prompt_at]
        done = sum(1 for m in conversation[prompt_at:] if m["role"] == "tool")
        calls = self.script.get(prompt["content"], [])
        if done < len(calls):
            return {"role": "assistant", "tool_call": {"id": f"call-{prompt['id']}-{done + 1}", "command": calls[done]}}
        return {"role": "assistant", "content": f"Done: {prompt['content']}"}


class Agent:
    """The loop: a turn per prompt, a step per tool call, rewinds that keep files and conversation together."""

    def __init__(self, workspace: str, model: ScriptedModel, client: Optional[cowfs.Client] = None):
        self.workspace = workspace
        self.model = model
        self.client = client or cowfs.Client(workspace=workspace)
        self.conversation: List[Message] = []
        self.prompts = 0

    def prompt(self, text: str) -> cowfs.Turn:
        """A user message: its turn, the model's tool calls run in the workspace, the answer."""
        self.prompts += 1
        msg = {"id": f"msg-{self.prompts}", "role": "user", "content": text}
        self.conversation.append(msg)
        self.client.begin_turn(id=f"turn-{self.prompts}", anchor=msg["id"])
        try:
            while True:
                reply = self.model.next(self.conversation)
                self.conversation.append(reply)
                call = reply.get("tool_call")
                if call is None:
                    break
                self.client.begin_step(call["id"])  # changes from here on carry the tool call
                out = subprocess.run(["sh", "-c", call["command"]], cwd=self.workspace,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                self.conversation.append({"role": "tool", "tool_call_id": call["id"],
                                          "content": f"exit {out.returncode}\n{out.stdout}"})
        finally:
            # Ended on every path, or the next rollback would say a turn is open.
            ended = self.client.end_turn()
        return ended

    def rewind(self, message_id: str) -> cowfs.RollbackResult:
        """Back to before the turn message_id began: files rolled back, conversation cut at the marker."""
        anchored = [t for t in self.client.turns().turns if t.anchor == message_id]
        if not anchored:
            raise cowfs.NotFoundError("not_found", f"no turn in the window began with {message_id}")
        res = self.client.rollback(anchored[-1].num)
        if not res.complete or res.marker is None:
            # A partial rollback leaves no marker: keep the conversation as it is.
            return res
        self.truncate(res.marker)
        return res

    def truncate(self, marker: cowfs.Marker) -> None:
        """Cuts the conversation at the marker's anchor; its note tells the model why."""
        cut = next((i for i, m in enumerate(self.conversation) if m.get("id") == marker.anchor), None)
        if cut is not None:
            del self.conversation[cut:]
            self.conversation.append({"role": "system", "content": marker.note})


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workspace", help="a workspace mounted with cowfs mount --background")
    args = ap.parse_args(argv)

    agent = Agent(args.workspace, ScriptedModel(SCRIPT))
    for text in SCRIPT:
        t = agent.prompt(text)
        print(f"turn {t.num} ({t.anchor}): {t.changed_paths} paths changed")
    for c in agent.client.turn("turn-2").changes:
        print(f"  turn-2 {c.kind} {c.path} by {c.command} in {c.step}")

    res = agent.rewind("msg-2")
    print(f"rolled back to before turn {res.target}: {res.counts.restored} restored, "
          f"{res.counts.recovered} recovered, {res.counts.deleted} deleted")
    for m in agent.client.markers().markers:
        print(f"marker: cut the conversation at {m.anchor} (turn {m.turn}): {m.note}")
    print(json.dumps(agent.conversation, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
