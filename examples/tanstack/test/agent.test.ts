// The TanStack AI agent in a real cowfs workspace: three user messages
// whose tool calls run npm init -y, sed -i, rm -rf, mkdir -p, cp and mv
// and write files, then /undo, /redo, a revert to the first message and
// /unrevert. After each step: the files, the conversation, the markers
// and the FileChanged events, against what that step must have done.

import assert from "node:assert/strict";
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";

import { ConflictError, type FileChangedEvent } from "@cowfs/client";
import { fuseSkip, TestWorkspace } from "@cowfs/client/testing";
import type { UIMessage } from "@tanstack/ai";

import { CodingAgent } from "../src/agent.js";
import { demoMessages, demoScript, greetJs, greetTestJs, notesMd, readmeMd, thanks } from "../src/demo.js";
import { scriptedText, type ScriptedAdapter } from "../src/scripted-adapter.js";

/** The workspace's tree: "dir/" for directories, file → content. */
async function tree(w: TestWorkspace, rel = ""): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await fs.readdir(w.path(rel), { withFileTypes: true })) {
    const p = rel === "" ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) {
      out[`${p}/`] = "";
      Object.assign(out, await tree(w, p));
    } else {
      out[p] = await fs.readFile(w.path(p), "utf8");
    }
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/**
 * An event as a line: change, path, who (command or rewind), tool call,
 * model step. sed -i's temporary name is normalized; npm's command name
 * (its process title, "npm init") is cut to "npm".
 */
function line(e: FileChangedEvent): string {
  const norm = (p?: string) => p?.replace(/sed[A-Za-z0-9]{6}$/, "sed*");
  const from = e.from === undefined ? "" : ` <- ${norm(e.from)}`;
  const who = e.cause ?? e.command.replace(/^npm.*/, "npm");
  return `${e.change} ${norm(e.path)}${from} | ${who} ${e.toolCallId ?? "-"} ${e.stepId ?? "-"}`;
}

/** A message as a line: id, role, then its parts (tool calls and results by id, texts). */
function msg(m: UIMessage): string {
  const parts = m.parts.map((p) => {
    if (p.type === "text") return `text:${p.content}`;
    if (p.type === "tool-call") return `call:${p.id}:${p.name}`;
    if (p.type === "tool-result") return `result:${p.toolCallId}`;
    return p.type;
  });
  return `${m.id} ${m.role} ${parts.join(" ")}`;
}

const hi = greetJs.replace("hello", "hi");

describe("a TanStack AI coding agent on a cowfs workspace", { skip: fuseSkip() }, () => {
  let w: TestWorkspace;
  let agent: CodingAgent;
  let model: ScriptedAdapter;
  const events: FileChangedEvent[] = [];
  const snap: Record<string, Record<string, string>> = {};
  const convo: Record<string, UIMessage[]> = {};

  /**
   * The events since the last call, as lines. Events npm made are checked
   * apart (npm versions write package.json their own ways): they must only
   * touch package.json, and bring it into being.
   */
  function take(): { lines: string[]; npm: string[] } {
    const all = events.splice(0).map(line);
    return { lines: all.filter((l) => !l.includes("| npm ")), npm: all.filter((l) => l.includes("| npm ")) };
  }

  /** The conversation as lines. */
  const conversation = () => agent.messages.map(msg);
  const markers = async () => (await agent.history.markers()).map((m) => m.messageId);

  before(async () => {
    w = await TestWorkspace.create({ seed: { ".gitignore": "node_modules\n" } });
    // The agent finds the daemon from the workspace path, as a harness does.
    process.env.COWFS_STATE_DIR = w.state;
    model = scriptedText(demoScript);
    agent = await CodingAgent.open({ workspace: w.dir, adapter: model, conversation: path.join(w.root, "conversation.json") });
    agent.onFileChanged((e) => events.push(e));
    snap.start = await tree(w);
  });
  after(async () => {
    await agent?.close();
    assert.deepEqual(await w?.cleanup(), []);
  });

  it("message 1: npm init -y, a module, mkdir -p and a test file", async () => {
    assert.equal(await agent.input(demoMessages[0]), "Created package.json, src/greet.js and a unit test.");

    const t = await tree(w);
    const pkg = JSON.parse(t["package.json"] ?? "{}");
    assert.equal(pkg.name, "ws");
    assert.equal(pkg.description, "");
    assert.deepEqual(t, {
      ".gitignore": "node_modules\n",
      "package.json": t["package.json"],
      "src/": "",
      "src/greet.js": greetJs,
      "test/": "",
      "test/unit/": "",
      "test/unit/greet.test.js": greetTestJs,
    });
    snap.m1 = t;

    assert.deepEqual(conversation(), [
      `msg-1 user text:${demoMessages[0]}`,
      "msg-1-a4 assistant call:msg-1-call-1-1:bash result:msg-1-call-1-1 call:msg-1-call-2-1:write_file result:msg-1-call-2-1 " +
        "call:msg-1-call-3-1:bash call:msg-1-call-3-2:write_file result:msg-1-call-3-1 result:msg-1-call-3-2 " +
        "text:Created package.json, src/greet.js and a unit test.",
    ]);
    convo.m1 = structuredClone(agent.messages);

    const { lines, npm } = take();
    assert.deepEqual(lines, [
      "created src | node msg-1-call-2-1 msg-1-a2",
      "created src/greet.js | node msg-1-call-2-1 msg-1-a2",
      // One model step with two tool calls: each change names its own.
      "created test | mkdir msg-1-call-3-1 msg-1-a3",
      "created test/unit | mkdir msg-1-call-3-1 msg-1-a3",
      "created test/unit/greet.test.js | node msg-1-call-3-2 msg-1-a3",
    ]);
    assert.ok(npm.length > 0, "npm init's changes are reported");
    for (const l of npm) assert.match(l, /^(created|updated|moved) package\.json\S* .*\| npm msg-1-call-1-1 msg-1-a1$/);
    assert.ok(npm.some((l) => /^(created package\.json |moved package\.json <- )/.test(l)), npm.join("\n"));
  });

  it("message 2: sed -i, rm -rf, a file write", async () => {
    assert.equal(await agent.input(demoMessages[1]), "The greeting says hi now, and the tests are gone.");
    const t = await tree(w);
    assert.deepEqual(t, {
      ".gitignore": "node_modules\n",
      "NOTES.md": notesMd,
      "package.json": snap.m1!["package.json"],
      "src/": "",
      "src/greet.js": hi,
    });
    snap.m2 = t;
    assert.deepEqual(conversation().map((l) => l.split(" ").slice(0, 2).join(" ")), ["msg-1 user", "msg-1-a4 assistant", "msg-2 user", "msg-2-a4 assistant"]);
    convo.m2 = structuredClone(agent.messages);
    assert.deepEqual(take(), {
      lines: [
        "created src/sed* | sed msg-2-call-1-1 msg-2-a1",
        "moved src/greet.js <- src/sed* | sed msg-2-call-1-1 msg-2-a1",
        "deleted test/unit/greet.test.js | rm msg-2-call-2-1 msg-2-a2",
        "deleted test/unit | rm msg-2-call-2-1 msg-2-a2",
        "deleted test | rm msg-2-call-2-1 msg-2-a2",
        "created NOTES.md | node msg-2-call-3-1 msg-2-a3",
      ],
      npm: [],
    });
  });

  it("message 3: sed -i on package.json, mkdir -p and cp, mv, a file write", async () => {
    assert.equal(await agent.input(demoMessages[2]), "Described the package, built it, and moved the notes.");
    const t = await tree(w);
    assert.deepEqual(t, {
      ".gitignore": "node_modules\n",
      "README.md": readmeMd,
      "build/": "",
      "build/out/": "",
      "build/out/greet.js": hi,
      "docs/": "",
      "docs/NOTES.md": notesMd,
      "package.json": snap.m1!["package.json"]!.replace('"description": ""', '"description": "Greets people."'),
      "src/": "",
      "src/greet.js": hi,
    });
    snap.m3 = t;
    convo.m3 = structuredClone(agent.messages);
    assert.equal(convo.m3.length, 6);
    assert.deepEqual(take(), {
      lines: [
        "created sed* | sed msg-3-call-1-1 msg-3-a1",
        "moved package.json <- sed* | sed msg-3-call-1-1 msg-3-a1",
        "created build | mkdir msg-3-call-2-1 msg-3-a2",
        "created build/out | mkdir msg-3-call-2-1 msg-3-a2",
        "created build/out/greet.js | cp msg-3-call-2-1 msg-3-a2",
        "created docs | mkdir msg-3-call-3-1 msg-3-a3",
        "moved docs/NOTES.md <- NOTES.md | mv msg-3-call-3-1 msg-3-a3",
        "created README.md | node msg-3-call-3-2 msg-3-a3",
      ],
      npm: [],
    });
    const { turns } = await agent.history.client.turns();
    assert.deepEqual(turns.map((x) => [x.num, x.id, x.anchor, x.state]), [
      [1, "turn-1", "msg-1", "closed"],
      [2, "turn-2", "msg-2", "closed"],
      [3, "turn-3", "msg-3", "closed"],
    ]);
    assert.deepEqual(await markers(), []);
  });

  it("/undo: the files and the conversation go back to before message 3", async () => {
    assert.equal(await agent.input("/undo"), "Undid the last turn. Files restored: 4");
    assert.deepEqual(await tree(w), snap.m2);
    assert.deepEqual(agent.messages, convo.m2);
    assert.deepEqual(await markers(), ["msg-3"]);
    assert.deepEqual(take().lines, [
      "moved NOTES.md <- docs/NOTES.md | undo - -",
      "deleted README.md | undo - -",
      "deleted build | undo - -",
      "deleted build/out | undo - -",
      "deleted build/out/greet.js | undo - -",
      "deleted docs | undo - -",
      "updated package.json | undo - -",
    ]);
  });

  it("/redo: message 3 and its files come back", async () => {
    assert.equal(await agent.input("/redo"), "Redid. Files restored: 4");
    assert.deepEqual(await tree(w), snap.m3);
    assert.deepEqual(agent.messages, convo.m3);
    assert.deepEqual(await markers(), []);
    assert.deepEqual(take().lines, [
      "created README.md | redo - -",
      "created build | redo - -",
      "created build/out | redo - -",
      "created build/out/greet.js | redo - -",
      "created docs | redo - -",
      "moved docs/NOTES.md <- NOTES.md | redo - -",
      "updated package.json | redo - -",
    ]);
  });

  it("/revert msg-1: back to before the first message, files and conversation", async () => {
    assert.equal(await agent.input("/revert msg-1"), "Reverted to before msg-1. Files restored: 5");
    assert.deepEqual(await tree(w), snap.start);
    assert.deepEqual(agent.messages, []);
    assert.deepEqual(await markers(), ["msg-1"]);
    assert.deepEqual(take().lines, [
      "deleted README.md | revert - -",
      "deleted build | revert - -",
      "deleted build/out | revert - -",
      "deleted build/out/greet.js | revert - -",
      "deleted docs | revert - -",
      "deleted docs/NOTES.md | revert - -",
      "deleted package.json | revert - -",
      "deleted src | revert - -",
      "deleted src/greet.js | revert - -",
    ]);
  });

  it("/unrevert: everything is back", async () => {
    assert.equal(await agent.input("/unrevert"), "Unreverted. Files restored: 5");
    assert.deepEqual(await tree(w), snap.m3);
    assert.deepEqual(agent.messages, convo.m3);
    assert.deepEqual(await markers(), []);
    assert.deepEqual(take().lines, [
      "created README.md | unrevert - -",
      "created build | unrevert - -",
      "created build/out | unrevert - -",
      "created build/out/greet.js | unrevert - -",
      "created docs | unrevert - -",
      "created docs/NOTES.md | unrevert - -",
      "created package.json | unrevert - -",
      "created src | unrevert - -",
      "created src/greet.js | unrevert - -",
    ]);
  });

  it("stacked rewinds: /undo, /undo, /revert to a later message, /redo, /unrevert", async () => {
    await agent.input("/undo"); // before message 3
    await agent.input("/undo"); // before message 2
    assert.deepEqual(await tree(w), snap.m1);
    assert.deepEqual(agent.messages, convo.m1);
    // One marker per conversation point: the cut at message 2 replaces
    // the one at message 3.
    assert.deepEqual(await markers(), ["msg-2"]);
    // Forward again, to before message 3: message 2 and its files come back.
    assert.equal(await agent.input("/revert msg-3"), "Reverted to before msg-3. Files restored: 3");
    assert.deepEqual(await tree(w), snap.m2);
    assert.deepEqual(agent.messages, convo.m2);
    assert.deepEqual(await markers(), ["msg-3"]);
    assert.equal(await agent.input("/redo"), "Redid. Files restored: 3");
    assert.deepEqual(await tree(w), snap.m1);
    assert.deepEqual(agent.messages, convo.m1);
    assert.deepEqual(await markers(), ["msg-2"]);
    // Two rollbacks undone: before message 2 (3 files), before message 3 (4).
    assert.equal(await agent.input("/unrevert"), "Unreverted. Files restored: 7");
    assert.deepEqual(await tree(w), snap.m3);
    assert.deepEqual(agent.messages, convo.m3);
    assert.deepEqual(await markers(), []);
    take();
  });

  it("a message after /undo: the model reads the marker's note, and the undo is final", async () => {
    await agent.input("/undo");
    take();
    assert.equal(await agent.input(thanks), "You are welcome.");
    const call = model.calls[model.calls.length - 1]!;
    assert.equal(call.systemPrompts.length, 1);
    assert.match(call.systemPrompts[0]!, /Messages from turn 3 on were removed/);
    // The model no longer sees message 3.
    assert.deepEqual(
      call.messages.filter((m) => m.role === "user").map((m) => m.content),
      [demoMessages[0], demoMessages[1], thanks],
    );
    assert.deepEqual(conversation().map((l) => l.split(" ").slice(0, 2).join(" ")), [
      "msg-1 user",
      "msg-1-a4 assistant",
      "msg-2 user",
      "msg-2-a4 assistant",
      "msg-4 user",
      "msg-4-a1 assistant",
    ]);
    assert.deepEqual(await tree(w), snap.m2);
    await assert.rejects(agent.input("/redo"), ConflictError);
    const { turns } = await agent.history.client.turns();
    assert.deepEqual(turns.map((x) => [x.anchor, x.state]), [
      ["msg-1", "closed"],
      ["msg-2", "closed"],
      ["msg-4", "closed"],
    ]);
  });

  it("the conversation file reads back as the conversation was", async () => {
    await agent.input("/undo");
    const again = await CodingAgent.open({ workspace: w.dir, adapter: model, conversation: agent.conversation });
    try {
      assert.deepEqual(again.messages, agent.messages);
      assert.ok(again.messages[0]?.createdAt instanceof Date);
    } finally {
      await again.close();
    }
    await agent.input("/redo");
    take();
  });
});
