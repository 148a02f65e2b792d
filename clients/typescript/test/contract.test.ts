// The contract between the daemon and src/types.ts: real replies of
// every JSON endpoint — status idle and with a turn open, turns, a turn's
// changes, steps, diffs, a dry and a real rollback with renames undone,
// markers, an unrevert, every event of the session, error replies and a
// purge — compared key by key with the types (test/wire-schema.ts, which
// tsc checks against them). A field the server sends and the types do
// not declare fails here, and so does a required field it does not send.

import assert from "node:assert/strict";
import * as http from "node:http";
import { after, before, describe, it } from "node:test";

import { OutOfWindowError, type CowfsClient } from "../src/index.js";
import { fuseSkip, TestWorkspace } from "../src/testing.js";
import { mismatches, schema } from "./wire-schema.js";

/** A request's status and parsed body, past the client: error replies too. */
function raw(socket: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ socketPath: socket, method, path, headers: { Host: "cowfs" }, agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end(payload);
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("the daemon's replies match the TypeScript types", { skip: fuseSkip() }, () => {
  let w: TestWorkspace;
  let c: CowfsClient;
  /** Every mismatch seen, with the reply it was in. */
  const problems: string[] = [];
  const check = (name: keyof typeof schema, value: unknown) => problems.push(...mismatches(value, schema[name], name));

  before(async () => {
    w = await TestWorkspace.create({ seed: { "main.go": "one\ntwo\n", "old.txt": "old\n", "gone.txt": "x\n" } });
    await w.umount();
    await w.mount("--window", "3");
    c = w.client();
  });
  after(async () => assert.deepEqual(await w.cleanup(), []));

  it("status, turns, steps, changes, diffs", async () => {
    check("Status", await c.status());
    check("Turn", await c.beginTurn({ id: "c1", anchor: "m1" }));
    check("Status", await c.status()); // with open_turn
    check("StepStarted", await c.beginStep("call_1", { name: "Bash" }));
    await w.sh("sed -i s/two/TWO/ main.go && mv old.txt new.txt && rm gone.txt && mkdir -p d && printf 'a\\0b' > d/bin && chmod 600 main.go && ln -s main.go link");
    check("Turn", await c.endTurn());
    check("TurnList", await c.turns());
    check("TurnDetail", await c.turn("c1"));
    check("TurnDetail", await c.turn("c1", { step: "call_1" }));
    check("StepList", await c.steps("c1"));
    check("OutsideChanges", await c.outside());
    check("Diff", await c.diff({ from: "c1" }));
    check("Diff", await c.diff({ from: "c1", to: "now", stat: true }));
    check("Diff", await c.diff({ from: "c1", step: "call_1" }));
    for (const [n, was] of [[2, "new"], [3, "new2"], [4, "new3"]] as const) {
      await c.beginTurn({ id: `c${n}`, anchor: `m${n}` });
      await w.sh(`echo ${n} >> main.go && mv ${was}.txt new${n}.txt`);
      await c.endTurn();
    }
    check("TurnList", await c.turns());
    check("Status", await c.status()); // oldest_turn, latest_turn; fuse_requests
    assert.deepEqual(problems.splice(0), []);
  });

  it("rollbacks, markers, unrevert, events", async () => {
    check("RollbackResult", await c.rollback({ to: "c3", dry_run: true }));
    check("RollbackResult", await c.rollback({ to: "c3" }));
    check("MarkerList", await c.markers());
    check("Status", await c.status()); // unrevertable
    check("RollbackResult", await c.unrevert());
    let events = 0;
    for await (const e of c.events({ since: 0, follow: false })) {
      check("Event", e);
      events++;
    }
    assert.ok(events > 10, `${events} events`);
    assert.deepEqual(problems.splice(0), []);
  });

  it("error replies; out_of_window with its range", async () => {
    const gone = await raw(w.socket, "POST", "/v1/rollback", { to: 1 });
    assert.equal(gone.status, 410);
    check("ErrorReply", gone.json);
    assert.deepEqual(gone.json, {
      error: { code: "out_of_window", message: "turn 1 has left the window; turns 2 to 4 can be reached", oldest: 2, latest: 4 },
    });
    await assert.rejects(c.rollback({ to: 1 }), (e) => e instanceof OutOfWindowError && e.oldest === 2 && e.latest === 4);
    for (const [method, path] of [
      ["GET", "/v1/turns/nope"],
      ["POST", "/v1/turns/current/end"],
      ["GET", "/v1/diff"],
      ["PUT", "/v1/status"],
    ] as const) {
      const r = await raw(w.socket, method, path);
      assert.ok(r.status >= 400, `${method} ${path}: ${r.status}`);
      check("ErrorReply", r.json);
    }
    assert.deepEqual(problems.splice(0), []);
  });

  it("purge", async () => {
    check("Purged", await c.purge());
    assert.deepEqual(problems.splice(0), []);
    // The daemon exits right after its reply.
    const pid = w.pids[w.pids.length - 1]!;
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(!alive(pid), `daemon ${pid} still running after the purge`);
  });
});
