// A turn's agent scope through the client: a change made during the turn
// by a process outside it carries `agent: false` in the turn, the events
// and the diff, and a rollback of the turn leaves it.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { promises as fs } from "node:fs";
import { after, before, describe, it } from "node:test";

import { CowfsClient, type Event } from "../src/index.js";
import { fuseSkip, TestWorkspace } from "../src/testing.js";

describe("agent scope", { skip: fuseSkip() }, () => {
  let w: TestWorkspace;
  let c: CowfsClient;
  before(async () => {
    w = await TestWorkspace.create({ seed: { "shared.txt": "old\n" } });
    c = w.client();
  });
  after(async () => assert.deepEqual(await w.cleanup(), []));

  it("marks the person's change and keeps it through a rollback", async () => {
    // The agent: a shell that writes a.txt once told to.
    const agent = spawn("sh", ["-c", "read go; echo agent > a.txt; echo done"], { cwd: w.dir, stdio: ["pipe", "pipe", "inherit"] });
    try {
      const t = await c.beginTurn({ agent: { pids: [agent.pid!] } });
      assert.deepEqual(t.agent, { pids: [agent.pid!] });
      agent.stdin!.write("go\n");
      await once(agent.stdout!, "data");
      await fs.writeFile(w.path("shared.txt"), "the person's\n"); // this process: not the agent
      const ended = await c.endTurn();
      assert.equal(ended.changed_paths, 1);
      assert.equal(ended.not_agent_paths, 1);
    } finally {
      agent.kill("SIGKILL");
    }

    const d = await c.turn(1);
    const byPath = new Map(d.changes.map((ch) => [ch.path, ch]));
    assert.equal(byPath.get("a.txt")?.agent, undefined);
    assert.equal(byPath.get("shared.txt")?.agent, false);
    assert.equal(byPath.get("shared.txt")?.pid, process.pid);

    const events: Event[] = [];
    for await (const e of c.events({ follow: false })) if (e.type === "change") events.push(e);
    assert.ok(events.some((e) => e.path === "shared.txt" && e.agent === false && e.pid === process.pid));
    assert.ok(events.every((e) => e.path !== "a.txt" || e.agent === undefined));

    const diff = await c.diff({ from: 1 });
    assert.equal(diff.files.find((f) => f.path === "shared.txt")?.agent, false);
    assert.equal(diff.files.find((f) => f.path === "a.txt")?.agent, undefined);

    const res = await c.rollback({ to: 1 });
    const actions = new Map(res.paths.map((p) => [p.path, p.action]));
    assert.equal(actions.get("a.txt"), "delete");
    assert.equal(actions.get("shared.txt"), "skip");
    assert.equal(await fs.readFile(w.path("shared.txt"), "utf8"), "the person's\n");
  });
});
