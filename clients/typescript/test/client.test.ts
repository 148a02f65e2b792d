// Every endpoint of docs/api.md through CowfsClient, against a real
// daemon on a real mount, and every typed error.

import assert from "node:assert/strict";
import { promises as fs } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import {
  BadRequestError,
  BusyError,
  ConflictError,
  CowfsClient,
  CowfsError,
  NoDaemonError,
  NotFoundError,
  OutOfWindowError,
  pathBytes,
  pathString,
} from "../src/index.js";
import { apiError } from "../src/errors.js";
import { fuseSkip, TestWorkspace } from "../src/testing.js";

/** Asserts that p rejects with an error of class cls and API code code. */
async function rejectsWith(p: Promise<unknown>, cls: new (...a: never[]) => CowfsError, code: string, status?: number): Promise<CowfsError> {
  let caught: unknown;
  await assert.rejects(p, (err) => {
    caught = err;
    return true;
  });
  assert.ok(caught instanceof cls, `${String(caught)} is not a ${cls.name}`);
  const e = caught as CowfsError;
  assert.ok(e instanceof CowfsError);
  assert.equal(e.code, code);
  assert.ok(e.message.length > 0);
  if (status !== undefined) assert.equal(e.status, status);
  return e;
}

describe("CowfsClient", { skip: fuseSkip() }, () => {
  let w: TestWorkspace;
  let c: CowfsClient;
  before(async () => {
    w = await TestWorkspace.create({ seed: { "main.go": "one\ntwo\nthree\n", "old.txt": "old\n" } });
    c = w.client();
  });
  after(async () => assert.deepEqual(await w.cleanup(), []));

  it("status", async () => {
    const st = await c.status();
    assert.equal(st.workspace, w.dir);
    assert.equal(st.mountpoint, w.dir);
    assert.equal(st.socket, w.socket);
    assert.equal(st.window, 10);
    assert.equal(st.turns, 0);
    assert.equal(st.open_turn, undefined);
    assert.equal(st.unrevertable, 0);
    assert.equal(typeof st.pid, "number");
  });

  it("turns: begin, step, end, list, one turn, one step", async () => {
    const t = await c.beginTurn({ id: "turn-1", anchor: "msg-1" });
    assert.equal(t.num, 1);
    assert.equal(t.id, "turn-1");
    assert.equal(t.anchor, "msg-1");
    assert.equal(t.state, "open");
    assert.equal((await c.status()).open_turn?.num, 1);

    await rejectsWith(c.beginTurn({}), BusyError, "busy", 409);

    assert.deepEqual(await c.beginStep("call_a"), { turn: 1, id: "call_a" });
    await w.sh("sed -i s/two/TWO/ main.go");
    await c.beginStep("call_b");
    await w.sh("mkdir -p build && echo x > build/out && mv old.txt new.txt");

    const ended = await c.endTurn();
    assert.equal(ended.state, "closed");
    assert.equal(ended.changed_paths, 4);
    assert.ok(ended.ended_at);

    const list = await c.turns();
    assert.equal(list.turns.length, 1);
    assert.equal(list.outside_turns, 0);

    const d = await c.turn("turn-1");
    assert.equal(d.num, 1);
    assert.deepEqual(
      d.changes.map((x) => [x.path, x.kind, x.from, x.step, x.command]),
      [
        ["build", "created", undefined, "call_b", "mkdir"],
        ["build/out", "created", undefined, "call_b", "sh"],
        ["main.go", "modified", undefined, "call_a", "sed"],
        ["new.txt", "renamed", "old.txt", "call_b", "mv"],
      ],
    );
    assert.deepEqual(await c.turn(1), d);
    const a = await c.turn(1, { step: "call_a" });
    assert.deepEqual(a.changes.map((x) => x.path), ["main.go"]);
  });

  it("diff: a turn, a step, to now, stat", async () => {
    const d = await c.diff({ from: "turn-1" });
    assert.equal(d.from, "turn 1");
    assert.equal(d.to, "end of turn 1");
    const main = d.files.find((f) => f.path === "main.go");
    assert.equal(main?.status, "modified");
    assert.equal(main?.diff, "--- a/main.go\n+++ b/main.go\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n");
    assert.deepEqual(d.files.find((f) => f.path === "new.txt"), { path: "new.txt", from: "old.txt", status: "renamed", added: 0, removed: 0 });

    const step = await c.diff({ from: 1, step: "call_a" });
    assert.deepEqual(step.files.map((f) => f.path), ["main.go"]);

    const stat = await c.diff({ from: 1, to: "now", stat: true });
    assert.equal(stat.to, "now");
    assert.ok(stat.files.every((f) => f.diff === undefined));
    assert.equal(stat.files.find((f) => f.path === "main.go")?.added, 1);
  });

  it("content: a file as a turn found it", async () => {
    assert.equal((await c.content(1, "main.go")).toString(), "one\ntwo\nthree\n");
    assert.equal((await c.content("turn-1", "old.txt")).toString(), "old\n");
    await rejectsWith(c.content(1, "build/out"), NotFoundError, "not_found", 404);
    await rejectsWith(c.content(1, "../../etc/passwd"), BadRequestError, "bad_request", 400);
  });

  it("rollback: dry run, then for real, then markers and unrevert", async () => {
    const plan = await c.rollback({ to: "turn-1", dry_run: true });
    assert.equal(plan.dry_run, true);
    assert.equal(plan.marker, undefined);
    assert.equal(plan.rollback, undefined);
    assert.equal(await fs.readFile(w.path("main.go"), "utf8"), "one\nTWO\nthree\n");
    assert.deepEqual(
      plan.paths.map((p) => [p.path, p.action, p.type, p.from, p.to]),
      [
        ["build", "delete", "dir", undefined, undefined],
        ["build/out", "delete", "file", undefined, undefined],
        ["main.go", "restore", "file", undefined, undefined],
        ["new.txt", "delete", "file", undefined, "old.txt"],
        ["old.txt", "recover", "file", "new.txt", undefined],
      ],
    );

    const res = await c.rollback({ to: 1 });
    assert.equal(res.complete, true);
    assert.equal(res.failure, undefined);
    assert.equal(res.target, 1);
    assert.equal(res.rollback, 1);
    assert.deepEqual(res.counts, { restored: 1, recovered: 1, deleted: 1, skipped: 0, dirs_removed: 1, dirs_recreated: 0 });
    assert.equal(res.marker?.anchor, "msg-1");
    assert.equal(res.marker?.id, "turn-1");
    assert.ok((res.marker?.note.length ?? 0) <= 160);
    assert.equal(await fs.readFile(w.path("main.go"), "utf8"), "one\ntwo\nthree\n");
    assert.equal(await fs.readFile(w.path("old.txt"), "utf8"), "old\n");
    await assert.rejects(fs.stat(w.path("build")));

    const st = await c.status();
    assert.equal(st.unrevertable, 1);
    assert.equal((await c.turns()).turns[0]?.state, "reverted");

    const { markers } = await c.markers();
    assert.equal(markers.length, 1);
    assert.deepEqual(markers[0], res.marker);

    const un = await c.unrevert();
    assert.equal(un.unrevert, true);
    assert.equal(un.marker, undefined);
    assert.equal(await fs.readFile(w.path("main.go"), "utf8"), "one\nTWO\nthree\n");
    assert.equal(await fs.readFile(w.path("build/out"), "utf8"), "x\n");
    assert.deepEqual((await c.markers()).markers, []);
    await rejectsWith(c.unrevert({ force: false }), ConflictError, "conflict", 409);
  });

  it("paths that are not UTF-8: escaped bytes in replies, the bytes in queries", async () => {
    await c.beginTurn({ id: "latin1" });
    await w.sh("printf 'v1\\n' > \"$(printf 'caf\\351.txt')\"");
    await c.endTurn();
    await c.beginTurn({ id: "latin1-edit" });
    await w.sh("printf 'v2\\n' > \"$(printf 'caf\\351.txt')\"");
    await c.endTurn();
    const name = "caf\udce9.txt";
    assert.deepEqual((await c.turn("latin1")).changes.map((x) => x.path), [name]);
    assert.deepEqual(pathBytes(name), Buffer.from("caf\xe9.txt", "latin1"));
    assert.equal(pathString(pathBytes(name)), name);
    const onDisk = Buffer.concat([Buffer.from(w.dir + "/"), pathBytes(name)]);
    assert.equal(await fs.readFile(onDisk, "utf8"), "v2\n");
    assert.equal((await c.content("latin1-edit", name)).toString(), "v1\n");
  });

  it("typed errors carry the API's code and message", async () => {
    await rejectsWith(c.endTurn(), ConflictError, "conflict", 409);
    await rejectsWith(c.beginStep("s"), ConflictError, "conflict");
    await rejectsWith(c.beginTurn({ id: "turn-1" }), ConflictError, "conflict");
    await rejectsWith(c.turn("no-such-turn"), NotFoundError, "not_found", 404);
    await rejectsWith(c.rollback({ to: 99 }), NotFoundError, "not_found");
    await rejectsWith(c.diff({ from: 1, step: "nope" }), NotFoundError, "not_found");
    await rejectsWith(c.beginTurn({ id: "42" }), BadRequestError, "bad_request", 400);

    await c.beginTurn({ id: "turn-2" });
    const busy = await rejectsWith(c.rollback({ to: 1 }), BusyError, "busy", 409);
    assert.match(busy.message, /turn/);
    await rejectsWith(c.beginStep(""), BadRequestError, "bad_request");
    await c.endTurn();
  });
});

describe("apiError", () => {
  it("takes out_of_window's range from the reply's fields, not its message", () => {
    const e = apiError({ code: "out_of_window", message: "turn 1 has left the window; turns 3 to 4 can be reached", oldest: 5, latest: 9 }, 410);
    assert.ok(e instanceof OutOfWindowError);
    assert.equal(e.oldest, 5);
    assert.equal(e.latest, 9);
    assert.equal(e.status, 410);
    const bare = apiError({ code: "out_of_window", message: "turns 3 to 4 can be reached" }, 410) as OutOfWindowError;
    assert.equal(bare.oldest, undefined);
    assert.equal(bare.latest, undefined);
  });
});

describe("paths", () => {
  it("turn bytes into the API's strings and back", () => {
    const cases: Array<[Buffer, string]> = [
      [Buffer.from("plain/ascii.txt"), "plain/ascii.txt"],
      [Buffer.from("日本/ünï😀.md"), "日本/ünï😀.md"],
      [Buffer.from([0x61, 0xff, 0x62]), "a\udcffb"],
      [Buffer.from([0xc3]), "\udcc3"], // a cut sequence
      [Buffer.from([0xe0, 0x80, 0x80]), "\udce0\udc80\udc80"], // overlong
      [Buffer.from([0xed, 0xa0, 0x80]), "\udced\udca0\udc80"], // a surrogate's encoding
      [Buffer.from("\ufffd"), "\ufffd"], // U+FFFD itself is text
    ];
    for (const [bytes, str] of cases) {
      assert.equal(pathString(bytes), str, bytes.toString("hex"));
      assert.deepEqual(pathBytes(str), bytes, str);
    }
  });
});

describe("CowfsClient: out of window, shutdown, no daemon", { skip: fuseSkip() }, () => {
  let w: TestWorkspace;
  before(async () => {
    w = await TestWorkspace.create();
    await w.umount();
    await w.mount("--window", "2");
  });
  after(async () => assert.deepEqual(await w.cleanup(), []));

  it("OutOfWindowError names the reachable range", async () => {
    const c = w.client();
    for (let i = 1; i <= 4; i++) {
      await c.beginTurn({ id: `t${i}` });
      await w.sh(`echo ${i} > f${i}`);
      await c.endTurn();
    }
    const st = await c.status();
    assert.equal(st.oldest_turn, 3);
    assert.equal(st.latest_turn, 4);
    const e = (await rejectsWith(c.rollback({ to: 1 }), OutOfWindowError, "out_of_window", 410)) as OutOfWindowError;
    assert.equal(e.oldest, 3);
    assert.equal(e.latest, 4);
  });

  it("shutdown stops the daemon; then NoDaemonError", async () => {
    const c = w.client();
    await c.shutdown();
    const pid = w.pids[w.pids.length - 1]!;
    for (let i = 0; i < 100; i++) {
      try {
        process.kill(pid, 0);
      } catch {
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    const e = await rejectsWith(c.status(), NoDaemonError, "no_daemon");
    assert.equal((e as NoDaemonError).socket, w.socket);
  });
});

describe("CowfsClient: purge", { skip: fuseSkip() }, () => {
  let w: TestWorkspace;
  before(async () => {
    w = await TestWorkspace.create({ seed: { "keep.txt": "k\n" } });
  });
  after(async () => assert.deepEqual(await w.cleanup(), []));

  it("is refused while a turn is open, then stops the daemon and removes its journal", async () => {
    const c = w.client();
    await c.beginTurn({ id: "t1" });
    await w.sh("echo new > new.txt");
    await rejectsWith(c.purge(), BusyError, "busy", 409);
    await c.endTurn();
    const { removed } = await c.purge();
    assert.ok(removed.some((p) => p.endsWith("/journal")), `removed ${removed.join(", ")}`);
    assert.ok(removed.includes(path.join(w.dir, ".cowfs")), `removed ${removed.join(", ")}`);
    for (const p of removed) await assert.rejects(fs.lstat(p), `${p} is still there`);
    assert.equal(await fs.readFile(w.path("new.txt"), "utf8"), "new\n"); // the files stay
    await rejectsWith(c.status(), NoDaemonError, "no_daemon");
    const pid = w.pids[w.pids.length - 1]!;
    for (let i = 0; i < 100; i++) {
      try {
        process.kill(pid, 0);
      } catch {
        return; // exited
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail(`daemon ${pid} still running after the purge`);
  });
});
