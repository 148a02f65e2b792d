// History against a real daemon: file-change events tagged with the
// model step and tool call, undo/redo/revert/unrevert with their counts
// and markers, diff (of turns, ranges and steps), and conflicts skipped
// instead of overwritten.

import assert from "node:assert/strict";
import { promises as fs } from "node:fs";
import { after, before, describe, it } from "node:test";

import { BadRequestError, ConflictError, History, NotFoundError, type FileChangedEvent } from "../src/index.js";
import { fuseSkip, TestWorkspace } from "../src/testing.js";

/** The workspace's files (not directories) and their contents. */
async function files(w: TestWorkspace, rel = ""): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await fs.readdir(w.path(rel), { withFileTypes: true })) {
    const p = rel === "" ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) Object.assign(out, await files(w, p));
    else out[p] = await fs.readFile(w.path(p), "utf8");
  }
  return Object.fromEntries(Object.entries(out).sort());
}

/** The parts of an event a test pins down (temporary names of sed -i normalized). */
function brief(e: FileChangedEvent): string {
  const norm = (p?: string) => p?.replace(/sed[A-Za-z0-9]{6}$/, "sed*");
  const from = e.from === undefined ? "" : ` from ${norm(e.from)}`;
  const who = e.cause ?? `${e.command} ${e.toolCallId ?? "-"} ${e.stepId ?? "-"} ${e.messageId ?? "-"}`;
  return `${e.change} ${norm(e.path)}${from} (${who})`;
}

describe("History", { skip: fuseSkip() }, () => {
  let w: TestWorkspace;
  let h: History;
  const events: FileChangedEvent[] = [];
  /** The events since the last call. */
  const take = () => events.splice(0).map(brief);

  before(async () => {
    w = await TestWorkspace.create({ seed: { "README.md": "# app\n" } });
    h = await History.open({ socket: w.socket });
    h.onFileChanged((e) => events.push(e));
  });
  after(async () => {
    await h.close();
    assert.deepEqual(await w.cleanup(), []);
  });

  it("finds the daemon from the workspace path", async () => {
    const saved = process.env.COWFS_STATE_DIR;
    process.env.COWFS_STATE_DIR = w.state;
    try {
      const h2 = await History.open({ workspace: w.path("") });
      assert.equal(h2.client.socket, w.socket);
      await h2.close();
    } finally {
      if (saved === undefined) delete process.env.COWFS_STATE_DIR;
      else process.env.COWFS_STATE_DIR = saved;
    }
  });

  it("reports file changes with their model step, tool call and message", async () => {
    await h.beginTurn({ id: "turn-1", anchor: "msg-1" });
    await h.step({ id: "step-1", toolCallIds: ["call-1"] });
    await w.sh("mkdir -p src && printf 'one\\n' > src/a.txt");
    await h.step({ id: "step-2", toolCallIds: ["call-2", "call-3"] });
    await h.toolCall("call-2");
    await w.sh("sed -i s/one/ONE/ src/a.txt");
    await h.toolCall("call-3");
    await w.sh("mv README.md README.txt");
    await h.endTurn();
    // endTurn resolves once the turn's events have been delivered.
    assert.deepEqual(take(), [
      "created src (mkdir call-1 step-1 msg-1)",
      "created src/a.txt (sh call-1 step-1 msg-1)",
      "created src/sed* (sed call-2 step-2 msg-1)",
      "moved src/a.txt from src/sed* (sed call-2 step-2 msg-1)",
      "moved README.txt from README.md (mv call-3 step-2 msg-1)",
    ]);
  });

  it("undo, redo, revert, unrevert: files, results and events", async () => {
    await h.beginTurn({ id: "turn-2", anchor: "msg-2" });
    await h.step({ id: "step-3", toolCallIds: ["call-4"] });
    await w.sh("printf 'two\\n' >> src/a.txt && rm -rf src/b && printf 'b\\n' > b.txt");
    await h.endTurn();
    await h.beginTurn({ id: "turn-3", anchor: "msg-3" });
    await h.step({ id: "step-4", toolCallIds: ["call-5"] });
    await w.sh("rm b.txt && mkdir -p build/x && printf 'x\\n' > build/x/y");
    await h.endTurn();
    take();
    const after3 = await files(w);

    const undo = await h.undo();
    assert.equal(undo.action, "undo");
    assert.equal(undo.turn, 3);
    assert.equal(undo.messageId, "msg-3");
    assert.equal(undo.marker?.messageId, "msg-3");
    assert.equal(undo.marker?.turnId, "turn-3");
    assert.match(undo.marker?.note ?? "", /removed/);
    assert.equal(undo.filesRestored, 2); // b.txt recovered, build/x/y deleted
    assert.deepEqual(undo.skipped, []);
    assert.deepEqual(take(), ["created b.txt (undo)", "deleted build (undo)", "deleted build/x (undo)", "deleted build/x/y (undo)"]);
    assert.deepEqual(await files(w), { "README.txt": "# app\n", "b.txt": "b\n", "src/a.txt": "ONE\ntwo\n" });

    const redo = await h.redo();
    assert.equal(redo.action, "redo");
    assert.equal(redo.messageId, "msg-3");
    assert.equal(redo.marker, undefined);
    assert.equal(redo.filesRestored, 2);
    assert.deepEqual(take(), ["deleted b.txt (redo)", "created build (redo)", "created build/x (redo)", "created build/x/y (redo)"]);
    assert.deepEqual(await files(w), after3);

    const rev = await h.revert({ messageId: "msg-1" });
    assert.equal(rev.turn, 1);
    assert.equal(rev.messageId, "msg-1");
    assert.equal(rev.marker?.messageId, "msg-1");
    assert.deepEqual(await files(w), { "README.md": "# app\n" });
    assert.ok(take().every((e) => e.endsWith("(revert)")));
    assert.deepEqual((await h.markers()).map((m) => m.messageId), ["msg-1"]);

    const un = await h.unrevert();
    assert.equal(un.action, "unrevert");
    assert.equal(un.results.length, 1);
    assert.equal(un.messageId, "msg-1");
    assert.deepEqual(await files(w), after3);
    assert.ok(take().every((e) => e.endsWith("(unrevert)")));
    assert.deepEqual(await h.markers(), []);
  });

  it("unrevert undoes every rewind since the last turn; redo only the last", async () => {
    const start = await files(w);
    await h.undo(); // to before turn 3
    const afterUndo = await files(w);
    await h.revert({ messageId: "msg-1" });
    assert.deepEqual(await files(w), { "README.md": "# app\n" });
    const redo = await h.redo();
    assert.equal(redo.messageId, "msg-1");
    assert.deepEqual(await files(w), afterUndo);
    assert.equal((await h.client.status()).unrevertable, 1);

    await h.revert({ messageId: "msg-1" });
    const un = await h.unrevert();
    assert.equal(un.results.length, 2);
    assert.equal(un.messageId, "msg-3"); // the earliest rewind went back to before turn 3
    // The revert: README.txt (a rename, once), src/a.txt, b.txt; the undo: b.txt, build/x/y.
    assert.equal(un.filesRestored, 3 + 2);
    assert.deepEqual(await files(w), start);
    await assert.rejects(h.redo(), ConflictError);
    await assert.rejects(h.unrevert(), ConflictError);
  });

  it("diff by message: a turn, a range, to now", async () => {
    const d = await h.diff("msg-2");
    assert.equal(d.from, "turn 2");
    assert.equal(d.to, "end of turn 2");
    assert.deepEqual(d.files.map((f) => [f.path, f.status]), [
      ["b.txt", "created"],
      ["src/a.txt", "modified"],
    ]);
    assert.equal(d.patch, "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+b\n--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1,2 @@\n ONE\n+two\n");
    const range = await h.diff("msg-1", "msg-3");
    assert.equal(range.to, "turn 3");
    const now = await h.diff("turn-1", "now");
    assert.equal(now.to, "now");
    assert.ok(now.files.some((f) => f.path === "build/x/y" && f.status === "created"));
  });

  it("diff of a step: a tool call, a model step, counts only", async () => {
    // Turn 1: step-1 (one tool call, call-1) made src/a.txt; in step-2,
    // call-2 ran sed on it and call-3 renamed README.md.
    const call2 = await h.diff("msg-1", { step: "call-2" });
    assert.equal(call2.from, "turn 1 step call-2");
    assert.equal(call2.to, "end of the step");
    assert.deepEqual(call2.files.map((f) => [f.path, f.status]), [["src/a.txt", "modified"]]);
    assert.equal(call2.patch, "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n");
    const step1 = await h.diff(1, { step: "step-1" });
    assert.deepEqual(step1.files.filter((f) => f.path === "src/a.txt").map((f) => [f.status, f.diff]), [
      ["created", "--- /dev/null\n+++ b/src/a.txt\n@@ -0,0 +1 @@\n+one\n"],
    ]);
    const call3 = await h.diff("turn-1", undefined, { step: "call-3", stat: true });
    assert.deepEqual(call3.files.map((f) => [f.path, f.from, f.status]), [["README.txt", "README.md", "renamed"]]);
    assert.equal(call3.patch, "");
    await assert.rejects(h.diff("msg-1", { step: "no-such-step" }), NotFoundError);
    await assert.rejects(h.diff("msg-1", "now", { step: "call-2" }), BadRequestError);
  });

  it("skips a file changed outside a turn instead of overwriting it; force restores it", async () => {
    await h.beginTurn({ id: "turn-4", anchor: "msg-4" });
    await w.sh("printf 'agent\\n' > notes.txt && printf 'agent\\n' > other.txt");
    await h.endTurn();
    await w.sh("printf 'user\\n' > notes.txt"); // the user, between turns

    const plan = await h.undo({ dryRun: true });
    assert.equal(plan.dryRun, true);
    assert.equal(plan.marker, undefined);
    assert.equal(await fs.readFile(w.path("other.txt"), "utf8"), "agent\n");

    const undo = await h.undo();
    assert.deepEqual(undo.skipped.map((p) => p.path), ["notes.txt"]);
    assert.match(undo.skipped[0]!.reason ?? "", /outside a turn/);
    assert.equal(undo.filesRestored, 1);
    assert.equal(await fs.readFile(w.path("notes.txt"), "utf8"), "user\n");
    await assert.rejects(fs.stat(w.path("other.txt")));
    take();

    await h.redo();
    const forced = await h.undo({ force: true });
    assert.deepEqual(forced.skipped, []);
    await assert.rejects(fs.stat(w.path("notes.txt")));
  });

  it("says when there is nothing to rewind", async () => {
    await assert.rejects(h.revert({ messageId: "msg-unknown" }), NotFoundError);
    const w2 = await TestWorkspace.create();
    const h2 = await History.open({ socket: w2.socket });
    try {
      await assert.rejects(h2.undo(), NotFoundError);
      await assert.rejects(h2.redo(), ConflictError);
    } finally {
      await h2.close();
      assert.deepEqual(await w2.cleanup(), []);
    }
  });
});
