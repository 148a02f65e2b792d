// The check that stands in for SO_PEERCRED: a socket another user could
// have put or swapped at its path is refused before anything is sent to
// it, with the path that failed; the daemon's own layouts pass.

import assert from "node:assert/strict";
import { promises as fs } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";

import { checkSocket, CowfsClient, ForeignSocketError, NoDaemonError } from "../src/index.js";

/** A uid that is neither root nor the test's. */
const nobody = 65534;

/** Why these tests cannot run here: they chown to another user. */
function rootSkip(): string | false {
  if (process.getuid?.() === 0) {
    return false;
  }
  if (process.env.COWFS_TEST_DISALLOW_SKIP) {
    throw new Error("cannot run here: needs root to chown");
  }
  return "needs root to chown";
}

/** A Unix socket server that counts the connections it gets. */
async function listen(p: string): Promise<{ server: net.Server; connections: () => number }> {
  let n = 0;
  const server = net.createServer((c) => {
    n++;
    c.destroy();
  });
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(p, resolve));
  return { server, connections: () => n };
}

describe("checkSocket", { skip: rootSkip() }, () => {
  let top: string;
  const servers: net.Server[] = [];
  before(async () => {
    // Beneath /tmp: sticky and world-writable, which is fine above a
    // directory of root's.
    top = await fs.mkdtemp(path.join(tmpdir(), "cowfs-trust-"));
  });
  after(async () => {
    for (const s of servers) await new Promise((r) => s.close(r));
    await fs.rm(top, { recursive: true, force: true });
  });

  /** A fresh directory under top, with a listening socket s.sock in it. */
  async function socketIn(name: string): Promise<{ dir: string; sock: string; connections: () => number }> {
    const dir = path.join(top, name);
    await fs.mkdir(dir, { mode: 0o700 });
    const sock = path.join(dir, "s.sock");
    const { server, connections } = await listen(sock);
    servers.push(server);
    return { dir, sock, connections };
  }

  async function refused(sock: string, component: string, reason: RegExp): Promise<void> {
    await assert.rejects(checkSocket(sock), (err) => {
      assert.ok(err instanceof ForeignSocketError, String(err));
      assert.equal(err.code, "foreign_socket");
      assert.equal(err.component, component);
      assert.equal(err.socket, sock);
      assert.match(err.message, reason);
      assert.ok(err.message.startsWith(`refused: ${component} `), err.message);
      return true;
    });
  }

  it("passes a socket of this user's in a private directory beneath /tmp", async () => {
    const { sock } = await socketIn("ok");
    await checkSocket(sock);
  });

  it("refuses a socket another user owns, and the client sends it nothing", async () => {
    const { sock, connections } = await socketIn("theirs");
    await fs.lchown(sock, nobody, nobody);
    await refused(sock, sock, /is owned by uid 65534/);
    await assert.rejects(new CowfsClient(sock).beginTurn({ id: "secret" }), ForeignSocketError);
    assert.equal(connections(), 0);
  });

  it("refuses a socket directory another user owns", async () => {
    const { dir, sock } = await socketIn("theirdir");
    await fs.chown(dir, nobody, nobody);
    await refused(sock, dir, /is owned by uid 65534/);
  });

  it("refuses a group- or world-writable directory on the way, unless sticky", async () => {
    const { dir, sock } = await socketIn("shared");
    await fs.chmod(dir, 0o770);
    await refused(sock, dir, /writable by its group or by others \(mode 0770\)/);
    await fs.chmod(dir, 0o777);
    await refused(sock, dir, /mode 0777/);
    await fs.chmod(dir, 0o1777);
    await checkSocket(sock); // sticky: its entries are still only root's and ours
  });

  it("refuses a symlinked directory on the way", async () => {
    const { dir } = await socketIn("real");
    const link = path.join(top, "link");
    await fs.symlink(dir, link);
    await refused(path.join(link, "s.sock"), link, /is a symlink/);
  });

  it("follows a socket symlink of root's to a checked socket (a --mountpoint's link)", async () => {
    const { sock } = await socketIn("target");
    const linkDir = path.join(top, "mnt-state");
    await fs.mkdir(linkDir, { mode: 0o700 });
    const link = path.join(linkDir, "ctl.sock");
    await fs.symlink(sock, link);
    await checkSocket(link);
    await fs.lchown(link, nobody, nobody);
    await refused(link, link, /is owned by uid 65534/);
    await fs.lchown(link, 0, 0);
    await fs.lchown(sock, nobody, nobody);
    await refused(link, sock, /is owned by uid 65534/);
  });

  it("says there is no daemon where there is no socket", async () => {
    await assert.rejects(checkSocket(path.join(top, "none", "s.sock")), NoDaemonError);
    await assert.rejects(new CowfsClient(path.join(top, "none.sock")).status(), NoDaemonError);
  });
});
