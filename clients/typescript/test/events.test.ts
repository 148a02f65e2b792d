// The event stream: order, the end of a non-following read, stopping,
// gaps, and resuming across a daemon restart without losing or repeating
// an event.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import type { Event } from "../src/index.js";
import { fuseSkip, TestWorkspace } from "../src/testing.js";

/** Waits until cond holds (polling), failing after ms. */
async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Every event in the window, read without following. */
async function allEvents(w: TestWorkspace): Promise<Event[]> {
  const out: Event[] = [];
  for await (const e of w.client().events({ follow: false })) out.push(e);
  return out;
}

describe("events", { skip: fuseSkip() }, () => {
  let w: TestWorkspace;
  before(async () => {
    w = await TestWorkspace.create({ seed: { "a.txt": "a\n" } });
  });
  after(async () => assert.deepEqual(await w.cleanup(), []));

  it("follows changes and turn events in order, with who made them", async () => {
    const c = w.client();
    const ac = new AbortController();
    const seen: Event[] = [];
    const done = (async () => {
      for await (const e of c.events({ signal: ac.signal })) {
        seen.push(e);
        if (e.type === "turn_end") break;
      }
    })();
    await c.beginTurn({ id: "t1", anchor: "m1" });
    await c.beginStep("call_1");
    await w.sh("echo b >> a.txt && mkdir d && rm a.txt");
    await c.endTurn();
    await done;
    assert.deepEqual(
      seen.map((e) => [e.type, e.turn, e.step, e.path, e.kind, e.command, e.id, e.anchor]),
      [
        ["turn_begin", 1, undefined, undefined, undefined, undefined, "t1", "m1"],
        ["step", 1, "call_1", undefined, undefined, undefined, undefined, undefined],
        ["change", 1, "call_1", "a.txt", "modified", "sh", undefined, undefined],
        ["change", 1, "call_1", "d", "created", "mkdir", undefined, undefined],
        ["change", 1, "call_1", "a.txt", "deleted", "rm", undefined, undefined],
        ["turn_end", 1, "call_1", undefined, undefined, undefined, undefined, undefined],
      ],
    );
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.seq > seen[i - 1]!.seq);
  });

  it("without follow, ends with the latest event; since skips what came before", async () => {
    const all = await allEvents(w);
    assert.ok(all.length >= 6);
    const s = w.client().events({ follow: false, since: all[2]!.seq });
    const rest: Event[] = [];
    for await (const e of s) rest.push(e);
    assert.deepEqual(rest, all.slice(3));
    assert.equal(s.lastSeq, all[all.length - 1]!.seq);
  });

  it("an abort ends a waiting iteration quietly", async () => {
    const ac = new AbortController();
    const all = await allEvents(w);
    const got: Event[] = [];
    const done = (async () => {
      for await (const e of w.client().events({ since: all[all.length - 1]!.seq, signal: ac.signal })) got.push(e);
    })();
    await new Promise((r) => setTimeout(r, 100));
    ac.abort();
    await done;
    assert.deepEqual(got, []);
  });

  it("resumes after a daemon restart without losing or repeating events", async () => {
    const c = w.client();
    const start = (await allEvents(w)).pop()!.seq;
    const ac = new AbortController();
    const seen: Event[] = [];
    let reconnects = 0;
    const stream = c.events({ since: start, signal: ac.signal, retryDelay: 20, maxRetryDelay: 200, onReconnect: () => reconnects++ });
    const done = (async () => {
      for await (const e of stream) {
        seen.push(e);
        if (seen.filter((x) => x.type === "turn_end").length === 2) break;
      }
    })();

    await c.beginTurn({ id: "before-restart" });
    await w.sh("echo 1 > one && echo 2 > two");
    await c.endTurn();
    await until(() => seen.some((e) => e.type === "turn_end"), "the first turn's end");

    await w.umount(); // the stream ends with the daemon
    await until(() => reconnects >= 3, "reconnect attempts while no daemon runs");
    await w.mount();

    await c.beginTurn({ id: "after-restart" });
    await w.sh("echo 3 > three && rm one");
    await c.endTurn();
    await done;

    const all = (await allEvents(w)).filter((e) => e.seq > start);
    assert.deepEqual(seen, all);
    assert.deepEqual(
      seen.filter((e) => e.type === "change").map((e) => [e.path, e.kind]),
      [
        ["one", "created"],
        ["two", "created"],
        ["three", "created"],
        ["one", "deleted"],
      ],
    );
    assert.equal(stream.lastSeq, all[all.length - 1]!.seq);
  });
});

describe("events: gap", { skip: fuseSkip() }, () => {
  let w: TestWorkspace;
  before(async () => {
    w = await TestWorkspace.create();
    await w.umount();
    await w.mount("--window", "1");
  });
  after(async () => assert.deepEqual(await w.cleanup(), []));

  it("reports events that left the window as a gap, once", async () => {
    const c = w.client();
    for (let i = 1; i <= 3; i++) {
      await c.beginTurn();
      await w.sh(`echo ${i} > f${i}`);
      await c.endTurn();
    }
    const got: Event[] = [];
    const s = c.events({ since: 1, follow: false });
    for await (const e of s) got.push(e);
    assert.equal(got[0]?.type, "gap");
    assert.ok(got[0]!.seq > 1);
    assert.equal(got.filter((e) => e.type === "gap").length, 1);
    // After the gap: turn 3's events, and the turn_pruned events of the
    // turns that left (which name those turns).
    assert.ok(got.slice(1).every((e) => e.seq > got[0]!.seq && (e.turn === 3 || e.type === "turn_pruned")));
  });
});
