// The conversation across restarts, as TanStack's snapshots() promises
// ("the revert is saved, so unrevert() still works after a restart"):
// each message and command runs in a process of its own (main.js), the
// daemon restarts in between, and after each the files and the
// conversation are what they must be — a revert's hidden messages stay
// hidden, and come back with its unrevert; a message after an undo drops
// them for good and reaches the model with the marker's note.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";

import { fuseSkip, TestWorkspace } from "@cowfs/client/testing";

import { CodingAgent } from "../src/agent.js";
import { demoMessages, demoScript, thanks } from "../src/demo.js";
import { scriptedText } from "../src/scripted-adapter.js";

const main = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "src", "main.js");

/** The workspace's files and directories ("dir/"), with contents. */
async function tree(dir: string, rel = ""): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await fs.readdir(path.join(dir, rel), { withFileTypes: true })) {
    const p = rel === "" ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) {
      out[`${p}/`] = "";
      Object.assign(out, await tree(dir, p));
    } else {
      out[p] = await fs.readFile(path.join(dir, p), "utf8");
    }
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe("the conversation across restarts", { skip: fuseSkip() }, () => {
  let w: TestWorkspace;
  let conversation: string;
  const snap: Record<string, Record<string, string>> = {};

  /** Runs main.js with lines, as a new process: its exit code, replies and the conversation's message ids after the last line. */
  async function run(...lines: string[]): Promise<{ code: number; out: string; messages: string }> {
    const r = await promisify(execFile)(process.execPath, [main, w.dir, "--conversation", conversation, ...lines], { env: w.env }).then(
      (x) => ({ code: 0, out: x.stdout }),
      (e: { code?: number; stdout?: string; stderr?: string }) => {
        if (typeof e.code !== "number") throw e;
        return { code: e.code, out: `${e.stdout ?? ""}${e.stderr ?? ""}` };
      },
    );
    const ids = r.out.split("\n").filter((l) => l.startsWith("  messages: ")).pop();
    return { ...r, messages: ids?.slice("  messages: ".length) ?? "" };
  }

  before(async () => {
    w = await TestWorkspace.create({ seed: { ".gitignore": "node_modules\n" } });
    conversation = path.join(w.root, "conversation.json");
    process.env.COWFS_STATE_DIR = w.state;
  });
  after(async () => assert.deepEqual(await w?.cleanup(), []));

  it("each message in a process of its own: the conversation goes on", async () => {
    snap.start = await tree(w.dir);
    for (const [n, text] of demoMessages.entries()) {
      const r = await run(text);
      assert.equal(r.code, 0, r.out);
      assert.equal(r.messages, Array.from({ length: n + 1 }, (_, i) => `msg-${i + 1} msg-${i + 1}-a4`).join(" "));
      snap[`m${n + 1}`] = await tree(w.dir);
    }
    assert.notDeepEqual(snap.m2, snap.m3);
    const { turns } = await w.client().turns();
    assert.deepEqual(turns.map((t) => [t.id, t.anchor, t.state]), [
      ["turn-1", "msg-1", "closed"],
      ["turn-2", "msg-2", "closed"],
      ["turn-3", "msg-3", "closed"],
    ]);
  });

  it("a revert survives a restart of the harness and of the daemon, with its messages", async () => {
    const all = await CodingAgent.open({ workspace: w.dir, conversation, adapter: scriptedText(demoScript) });
    const messages = structuredClone(all.messages);
    await all.close();
    assert.equal(messages.length, 6);

    const r = await run("/revert msg-2");
    assert.match(r.out, /Reverted to before msg-2\. Files restored: \d+/);
    assert.equal(r.messages, "msg-1 msg-1-a4");
    assert.deepEqual(await tree(w.dir), snap.m1);

    await w.umount();
    await w.mount();
    // The harness again, in this process: the messages it reads back are
    // those it wrote, Dates included, and the revert still hides two of them.
    const again = await CodingAgent.open({ workspace: w.dir, conversation, adapter: scriptedText(demoScript) });
    assert.deepEqual(again.messages, messages.slice(0, 2));
    await again.close();
    assert.deepEqual(await tree(w.dir), snap.m1);

    const un = await run("/unrevert");
    assert.match(un.out, /Unreverted\. Files restored: \d+/);
    assert.equal(un.messages, "msg-1 msg-1-a4 msg-2 msg-2-a4 msg-3 msg-3-a4");
    assert.deepEqual(await tree(w.dir), snap.m3);
    const back = await CodingAgent.open({ workspace: w.dir, conversation, adapter: scriptedText(demoScript) });
    assert.deepEqual(back.messages, messages);
    await back.close();
  });

  it("stacked rewinds across restarts; a message after them reaches the model with the note and makes them final", async () => {
    assert.equal((await run("/undo")).messages, "msg-1 msg-1-a4 msg-2 msg-2-a4");
    assert.equal((await run("/undo")).messages, "msg-1 msg-1-a4");
    assert.deepEqual(await tree(w.dir), snap.m1);
    assert.equal((await run("/redo")).messages, "msg-1 msg-1-a4 msg-2 msg-2-a4");
    assert.deepEqual(await tree(w.dir), snap.m2);

    const model = scriptedText(demoScript);
    const agent = await CodingAgent.open({ workspace: w.dir, conversation, adapter: model });
    try {
      assert.equal(await agent.input(thanks), "You are welcome.");
      const call = model.calls[model.calls.length - 1]!;
      assert.match(call.systemPrompts[0] ?? "", /Messages from turn 3 on were removed/);
      assert.deepEqual(
        call.messages.filter((m) => m.role === "user").map((m) => m.content),
        [demoMessages[0], demoMessages[1], thanks],
      );
    } finally {
      await agent.close();
    }
    const r = await run("/unrevert");
    assert.equal(r.code, 1);
    assert.match(r.out, /error: .*unrevert/);
    assert.equal(r.messages, "msg-1 msg-1-a4 msg-2 msg-2-a4 msg-4 msg-4-a1");
    assert.deepEqual(await tree(w.dir), snap.m2);
  });

  it("a turn left open by a harness that stopped is ended at the next start", async () => {
    await w.client().beginTurn({ id: "left-open" });
    const agent = await CodingAgent.open({ workspace: w.dir, conversation, adapter: scriptedText(demoScript) });
    await agent.close();
    assert.equal((await w.client().status()).open_turn, undefined);
  });

  it("refuses a conversation file inside the workspace", async () => {
    const opened = CodingAgent.open({ workspace: w.dir, conversation: w.path("conversation.json"), adapter: scriptedText(demoScript) });
    // Closed if it opens after all, so its event stream ends with the test.
    await assert.rejects(
      opened.then(async (a) => {
        await a.close();
        return a;
      }),
      /inside the workspace/,
    );
  });
});
