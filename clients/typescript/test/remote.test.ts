// The remote mode: a daemon's mutual-TLS listener on 127.0.0.1
// (`cowfs mount --listen --tls-dir`), with certificates made here by
// openssl. Status, a turn, a rollback and the event stream over TLS; the
// daemon refusing a client without a certificate, with another CA's and
// with an expired one, and the client refusing a daemon its ca.pem does
// not vouch for or whose certificate names another host; the stream
// resuming across a daemon restart, across a TCP connection dropped in the
// middle of a TLS record, and across a harness killed mid-stream and
// started again from the last seq it saw.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { promises as fs, readFileSync } from "node:fs";
import * as https from "node:https";
import * as net from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { CowfsClient, endpointFor, NoDaemonError, parseRemote, readTLSDir, TLSError, type Event } from "../src/index.js";
import { fuseSkip, testCertificates, TestWorkspace, type TestCertificates } from "../src/testing.js";
import { mismatches, schema } from "./wire-schema.js";

/** Waits until cond holds (polling), failing after ms. */
async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A TCP port on 127.0.0.1 that nothing listens on just now. */
async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

/**
 * A TCP port on 127.0.0.1 that forwards to target's, and can drop a
 * connection in the middle of what the daemon sends: after cut(), the next
 * chunk from the daemon (a TLS record, or part of one) is cut in half and
 * both ends closed.
 */
class CuttingProxy {
  connections = 0;
  cuts = 0;
  port = 0;
  private cutNext = false;
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();

  constructor(target: number) {
    this.server = net.createServer((client) => {
      this.connections++;
      const daemon = net.connect(target, "127.0.0.1");
      for (const s of [client, daemon]) {
        this.sockets.add(s);
        s.on("error", () => undefined);
        s.on("close", () => {
          client.destroy();
          daemon.destroy();
        });
      }
      client.on("data", (d: Buffer) => daemon.write(d));
      daemon.on("data", (d: Buffer) => {
        if (this.cutNext) {
          this.cutNext = false;
          this.cuts++;
          client.end(d.subarray(0, Math.max(1, d.length >> 1)));
          daemon.destroy();
          return;
        }
        client.write(d);
      });
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  cut(): void {
    this.cutNext = true;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** Every event in the window, read without following. */
async function allEvents(c: CowfsClient): Promise<Event[]> {
  const out: Event[] = [];
  for await (const e of c.events({ follow: false })) out.push(e);
  return out;
}

/** Asserts that p rejects with a TLSError whose message matches re. */
async function refused(p: Promise<unknown>, re: RegExp): Promise<void> {
  await assert.rejects(p, (err) => {
    assert.ok(err instanceof TLSError, `${String(err)} is not a TLSError`);
    assert.equal(err.code, "tls");
    assert.match(err.message, re);
    return true;
  });
}

describe("parseRemote", () => {
  const tlsDir = "/etc/cowfs/client";

  it("takes https://HOST:PORT only", () => {
    assert.deepEqual(parseRemote("https://127.0.0.1:8443", { tlsDir }), { url: "https://127.0.0.1:8443", host: "127.0.0.1", port: 8443, tlsDir });
    assert.equal(parseRemote("https://[::1]:8443/", { tlsDir }).host, "::1");
    assert.equal(parseRemote("https://cowfs.example:1", { tlsDir }).host, "cowfs.example");
    assert.throws(() => parseRemote("http://127.0.0.1:8443", { tlsDir }), /scheme must be https/);
    assert.throws(() => parseRemote("https://127.0.0.1", { tlsDir }), /no port/);
    assert.throws(() => parseRemote("https://127.0.0.1:8443/v1", { tlsDir }), /nothing more/);
    assert.throws(() => parseRemote("127.0.0.1:8443", { tlsDir }), /scheme must be https|not a URL/);
  });

  it("takes no remote without a client certificate", () => {
    assert.throws(() => parseRemote("https://127.0.0.1:8443", {}), /no client certificate/);
    assert.throws(() => new CowfsClient({ remote: "https://127.0.0.1:8443", tls: { ca: "x", cert: "", key: "y" } }), /tls.cert is empty/);
  });

  it("is what COWFS_REMOTE and COWFS_TLS_DIR name, whatever the path", async () => {
    const env = { COWFS_REMOTE: "https://127.0.0.1:8443", COWFS_TLS_DIR: tlsDir };
    assert.deepEqual(await endpointFor("/nonexistent/workspace", env), parseRemote(env.COWFS_REMOTE, { tlsDir }));
    const c = await CowfsClient.forWorkspace("/tmp", env);
    assert.equal(c.remote, "https://127.0.0.1:8443");
    assert.equal(c.socket, "");
    await assert.rejects(endpointFor("/tmp", { COWFS_REMOTE: env.COWFS_REMOTE }), /COWFS_TLS_DIR is not set/);
  });
});

describe("readTLSDir", () => {
  let root: string;
  let certs: TestCertificates;
  before(async () => {
    root = await fs.mkdtemp(path.join(tmpdir(), "cowfs-node-tls-"));
    certs = await testCertificates(root);
  });
  after(async () => fs.rm(root, { recursive: true, force: true }));

  it("reads ca.pem, cert.pem and key.pem, through symlinks (a Secret volume's layout)", async () => {
    const m = await readTLSDir(certs.client);
    assert.match(m.cert.toString(), /BEGIN CERTIFICATE/);
    const linked = path.join(root, "linked");
    await fs.mkdir(path.join(linked, "..data"), { recursive: true, mode: 0o700 });
    for (const f of ["ca.pem", "cert.pem", "key.pem"]) {
      await fs.copyFile(path.join(certs.client, f), path.join(linked, "..data", f));
      await fs.symlink(path.join("..data", f), path.join(linked, f));
    }
    assert.deepEqual(await readTLSDir(linked), m);
  });

  it("refuses what others could change or read", async () => {
    const d = path.join(root, "loose");
    await fs.cp(certs.client, d, { recursive: true });
    await fs.chmod(path.join(d, "key.pem"), 0o644);
    await assert.rejects(readTLSDir(d), /private key .*key\.pem is open to others \(mode 0644\)/);
    await fs.chmod(path.join(d, "key.pem"), 0o600);
    await fs.chmod(path.join(d, "ca.pem"), 0o666);
    await assert.rejects(readTLSDir(d), /ca\.pem is writable by its group or others/);
    await fs.chmod(path.join(d, "ca.pem"), 0o644);
    await fs.chmod(d, 0o777);
    await assert.rejects(readTLSDir(d), /is writable by its group or others \(mode 0777\)/);
    await fs.chmod(d, 0o700);
    await fs.rm(path.join(d, "cert.pem"));
    await assert.rejects(readTLSDir(d), /cannot|ENOENT/);
  });

  it("makes a client with unreadable material fail with a TLSError before connecting", async () => {
    const c = new CowfsClient({ remote: "https://127.0.0.1:1", tlsDir: path.join(root, "nonexistent") });
    await refused(c.status(), /TLS directory/);
  });
});

describe("remote client: the daemon's name", () => {
  let root: string;
  let certs: TestCertificates;
  let srv: https.Server;
  let port: number;
  before(async () => {
    root = await fs.mkdtemp(path.join(tmpdir(), "cowfs-node-tls-"));
    certs = await testCertificates(root);
    const m = await readTLSDir(certs.misnamed);
    // A stand-in for a daemon whose certificate names another host: it
    // answers anything, so only the client's check can refuse it.
    srv = https.createServer({ ...m, requestCert: true, rejectUnauthorized: true, minVersion: "TLSv1.3" }, (_req, res) => res.end("{}"));
    await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
    port = (srv.address() as net.AddressInfo).port;
  });
  after(async () => {
    await new Promise((resolve) => srv.close(resolve));
    await fs.rm(root, { recursive: true, force: true });
  });

  it("is checked: a certificate for cowfs.invalid does not do for 127.0.0.1", async () => {
    await refused(new CowfsClient({ remote: `https://127.0.0.1:${port}`, tlsDir: certs.client }).status(), /not trusted.*IP: 127\.0\.0\.1 is not in the cert's list/);
  });
});

describe("remote client", { skip: fuseSkip() }, () => {
  let root: string;
  let certs: TestCertificates;
  let url: string;
  let flags: string[];
  let w: TestWorkspace;
  let c: CowfsClient;
  before(async () => {
    root = await fs.mkdtemp(path.join(tmpdir(), "cowfs-node-remote-"));
    certs = await testCertificates(root);
    url = `https://127.0.0.1:${await freePort()}`;
    flags = ["--listen", url, "--tls-dir", certs.server];
    w = await TestWorkspace.create({ seed: { "main.go": "one\ntwo\n" }, flags });
    c = new CowfsClient({ remote: url, tlsDir: certs.client });
  });
  after(async () => {
    if (w !== undefined) assert.deepEqual(await w.cleanup(), []);
    await fs.rm(root, { recursive: true, force: true });
  });

  it("status", async () => {
    const st = await c.status();
    assert.equal(st.workspace, w.dir);
    assert.equal(st.pid, w.pids[0]);
    assert.equal(st.listen, url);
    assert.equal(c.remote, url);
    // A status with listen set matches the types key by key (contract.test.ts sees one without).
    assert.deepEqual(mismatches(st, schema.Status, "Status"), []);
  });

  it("a turn, its events, and a rollback", async () => {
    const ac = new AbortController();
    const seen: Event[] = [];
    const since = (await allEvents(c)).pop()?.seq ?? 0;
    const done = (async () => {
      for await (const e of c.events({ since, signal: ac.signal })) {
        seen.push(e);
        if (e.type === "rollback") break;
      }
    })();

    const t = await c.beginTurn({ id: "remote-1", anchor: "m1" });
    assert.equal(t.state, "open");
    await c.beginStep("call_1");
    await w.sh("echo three >> main.go && echo new > new.txt");
    const ended = await c.endTurn();
    assert.equal(ended.changed_paths, 2);
    assert.deepEqual((await c.turn("remote-1")).changes.map((x) => [x.path, x.kind]), [
      ["main.go", "modified"],
      ["new.txt", "created"],
    ]);
    assert.equal((await c.content("remote-1", "main.go")).toString(), "one\ntwo\n");

    const res = await c.rollback({ to: "remote-1" });
    assert.equal(res.complete, true);
    assert.equal(await fs.readFile(w.path("main.go"), "utf8"), "one\ntwo\n");
    await assert.rejects(fs.stat(w.path("new.txt")), { code: "ENOENT" });
    await done;

    assert.deepEqual(
      seen.filter((e) => e.type !== "change" || e.rollback === undefined).map((e) => [e.type, e.path, e.kind]),
      [
        ["turn_begin", undefined, undefined],
        ["step", undefined, undefined],
        ["change", "main.go", "modified"],
        ["change", "new.txt", "created"],
        ["turn_end", undefined, undefined],
        ["rollback", undefined, undefined],
      ],
    );
  });

  it("is refused without a client certificate, with another CA's, and with an expired one", async () => {
    // Past the client, which takes no remote without a certificate.
    const ca = readFileSync(path.join(certs.client, "ca.pem"));
    const anonymous = new Promise((resolve, reject) => {
      const u = new URL(url);
      const req = https.request({ host: u.hostname, port: u.port, path: "/v1/status", ca, minVersion: "TLSv1.3", agent: false }, resolve);
      req.on("error", reject);
      req.end();
    });
    await assert.rejects(anonymous, { code: "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED" });

    await refused(new CowfsClient({ remote: url, tlsDir: certs.otherCA }).status(), /refused the TLS connection \(unknown ca\)/);
    await refused(new CowfsClient({ remote: url, tlsDir: certs.expired }).status(), /refused the TLS connection \(certificate expired\)/);
    // A stream ends with the refusal: trying again would be refused again.
    await refused(allEvents(new CowfsClient({ remote: url, tlsDir: certs.otherCA })), /unknown ca/);
    const following = (async () => {
      for await (const _ of new CowfsClient({ remote: url, tlsDir: certs.expired }).events()) {
        // nothing comes
      }
    })();
    await refused(following, /certificate expired/);
  });

  it("refuses a daemon whose certificate its ca.pem does not vouch for", async () => {
    await refused(new CowfsClient({ remote: url, tlsDir: certs.untrusting }).status(), /daemon's certificate is not trusted/);
  });

  it("resumes the stream across a daemon restart without losing or repeating events", async () => {
    const start = (await allEvents(c)).pop()?.seq ?? 0;
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
    await until(() => reconnects >= 3, "reconnect attempts while no daemon listens");
    await assert.rejects(c.status(), NoDaemonError);
    await w.mount(...flags);

    await c.beginTurn({ id: "after-restart" });
    await w.sh("echo 3 > three && rm one");
    await c.endTurn();
    await done;

    const all = (await allEvents(c)).filter((e) => e.seq > start);
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

  it("resumes the stream after a TCP connection dropped in the middle of a TLS record", async () => {
    const start = (await allEvents(c)).pop()?.seq ?? 0;
    const proxy = new CuttingProxy(Number(new URL(url).port));
    await proxy.listen();
    const errors: (Error | undefined)[] = [];
    const ac = new AbortController();
    const seen: Event[] = [];
    const through = new CowfsClient({ remote: `https://127.0.0.1:${proxy.port}`, tlsDir: certs.client });
    const done = (async () => {
      for await (const e of through.events({ since: start, signal: ac.signal, retryDelay: 20, onReconnect: (i) => errors.push(i.error) })) {
        seen.push(e);
        if (seen.filter((x) => x.type === "turn_end").length === 2) break;
      }
    })();
    try {
      await until(() => proxy.connections >= 1, "the stream's connection");
      await c.beginTurn({ id: "before-cut" });
      await w.sh("echo 1 > cut1");
      await c.endTurn();
      await until(() => seen.some((e) => e.type === "turn_end"), "the first turn's end");
      proxy.cut(); // the next record is cut in half, and the connection dropped
      await c.beginTurn({ id: "after-cut" });
      await w.sh("echo 2 > cut2 && echo 3 > cut3");
      await c.endTurn();
      await done;
    } finally {
      ac.abort();
      await proxy.close();
    }
    assert.equal(proxy.cuts, 1);
    assert.ok(proxy.connections >= 2);
    assert.ok(errors.length >= 1);
    const all = (await allEvents(c)).filter((e) => e.seq > start);
    assert.deepEqual(seen, all); // nothing lost, nothing twice, no half event
    assert.deepEqual(
      seen.filter((e) => e.type === "change").map((e) => e.path),
      ["cut1", "cut2", "cut3"],
    );
  });

  it("an abort ends a waiting remote iteration quietly", async () => {
    const ac = new AbortController();
    const got: Event[] = [];
    const done = (async () => {
      for await (const e of c.events({ since: (await allEvents(c)).pop()?.seq ?? 0, signal: ac.signal })) got.push(e);
    })();
    await new Promise((r) => setTimeout(r, 200));
    ac.abort();
    await done;
    assert.deepEqual(got, []);
  });

  it("a harness killed mid-stream resumes from the last seq it saw: nothing lost, nothing twice", async () => {
    const follower = path.join(path.dirname(fileURLToPath(import.meta.url)), "remote-follower.js");
    const start = (await allEvents(c)).pop()?.seq ?? 0;
    /** Starts the harness after since; its events as they arrive. */
    const harness = (since: number) => {
      const child = spawn(process.execPath, [follower, url, certs.client, String(since)], { stdio: ["ignore", "pipe", "inherit"] });
      const got: Event[] = [];
      createInterface({ input: child.stdout! }).on("line", (l) => got.push(JSON.parse(l) as Event));
      const exited = new Promise((resolve) => child.once("exit", resolve));
      return { child, got, exited };
    };
    const changes = (evs: Event[]) => evs.filter((e) => e.type === "change").map((e) => e.path);

    const first = harness(start);
    try {
      await c.beginTurn({ id: "harness-1" });
      await w.sh("echo a > a1 && echo a > a2");
      await until(() => changes(first.got).length === 2, "the first harness's two changes");
    } finally {
      first.child.kill("SIGKILL");
      await first.exited;
    }
    // The harness is gone; the agent goes on.
    await w.sh("echo b > b1 && echo b > b2");
    await c.endTurn();

    const last = first.got[first.got.length - 1]!.seq;
    const second = harness(last);
    try {
      await c.beginTurn({ id: "harness-2" });
      await w.sh("echo c > c1");
      await c.endTurn();
      await until(() => second.got.filter((e) => e.type === "turn_end").length === 2, "the second harness's two turn ends");
    } finally {
      second.child.kill("SIGKILL");
      await second.exited;
    }

    const all = (await allEvents(c)).filter((e) => e.seq > start);
    assert.deepEqual([...first.got, ...second.got], all);
    assert.deepEqual(changes(all), ["a1", "a2", "b1", "b2", "c1"]);
  });
});
