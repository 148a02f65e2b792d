// Socket discovery agrees with the daemon's own idea of its socket, for
// awkward workspace names, from inside the workspace and through a
// symlink; a path with no daemon gets NoDaemonError.

import assert from "node:assert/strict";
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";

import { CowfsClient, findWorkspace, locate, NoDaemonError, socketFor, stateRoot } from "../src/index.js";
import { fuseSkip, TestWorkspace } from "../src/testing.js";

describe("stateRoot", () => {
  it("prefers COWFS_STATE_DIR, then root's /var/lib/cowfs, then XDG_STATE_HOME", () => {
    assert.equal(stateRoot({ COWFS_STATE_DIR: "/s", XDG_STATE_HOME: "/x" }), "/s");
    if (process.getuid?.() === 0) {
      assert.equal(stateRoot({ XDG_STATE_HOME: "/x" }), "/var/lib/cowfs");
    } else {
      assert.equal(stateRoot({ XDG_STATE_HOME: "/x" }), "/x/cowfs");
    }
  });

  it("puts the socket in COWFS_SOCKET_DIR when set, as the CLI does", async () => {
    const loc = await locate("/tmp", { COWFS_STATE_DIR: "/s", COWFS_SOCKET_DIR: "/run/cowfs" });
    assert.equal(loc.socket, path.join("/run/cowfs", path.basename(loc.dir) + ".sock"));
  });

  it("refuses a state directory too deep for a socket path", async () => {
    await assert.rejects(locate("/tmp/w", { COWFS_STATE_DIR: "/" + "d".repeat(100) }), /too deep for a Unix socket path/);
  });
});

describe("socket discovery", { skip: fuseSkip() }, () => {
  const workspaces: TestWorkspace[] = [];
  before(async () => {
    for (const name of ["ws", "my ws!ü+é (copy)", "a-very-long-workspace-name-that-goes-past-32-bytes.d"]) {
      workspaces.push(await TestWorkspace.create({ name, seed: { "sub/deeper/f": "x" } }));
    }
  });
  after(async () => {
    for (const w of workspaces) assert.deepEqual(await w.cleanup(), []);
  });

  it("finds the socket the daemon listens on, for any name", async () => {
    for (const w of workspaces) {
      assert.equal(await socketFor(w.dir, w.env), w.socket, w.dir);
      const loc = await locate(w.dir, w.env);
      assert.equal(loc.workspace, w.dir);
      assert.equal(path.dirname(loc.socket), loc.dir);
    }
  });

  it("finds the workspace from a path inside it, as the CLI does", async () => {
    const w = workspaces[0]!;
    const inner = w.path("sub/deeper");
    const loc = await findWorkspace(inner, w.env);
    assert.equal(loc.workspace, w.dir);
    assert.equal(loc.socket, w.socket);
    const cli = JSON.parse(await w.cowfs("-w", inner, "status", "--json"));
    assert.equal(cli.socket, loc.socket);
    // A path that does not exist yet, inside the workspace, too.
    assert.equal(await socketFor(w.path("sub/not-yet"), w.env), w.socket);
  });

  it("resolves symlinks first", async () => {
    const w = workspaces[0]!;
    const link = path.join(w.root, "link");
    await fs.symlink(w.dir, link);
    assert.equal(await socketFor(link, w.env), w.socket);
  });

  it("says no daemon runs for a path outside every workspace", async () => {
    const w = workspaces[0]!;
    const outside = path.join(w.root, "elsewhere");
    await fs.mkdir(outside);
    const loc = await findWorkspace(outside, w.env);
    assert.equal(loc.workspace, outside);
    const c = new CowfsClient(loc.socket);
    await assert.rejects(c.status(), (err: unknown) => {
      assert.ok(err instanceof NoDaemonError);
      assert.equal(err.code, "no_daemon");
      assert.equal(err.socket, loc.socket);
      return true;
    });
  });
});
