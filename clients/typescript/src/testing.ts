// Test helpers (`@cowfs/client/testing`): a real cowfs daemon on a real
// FUSE mount of a temporary workspace, for tests of this package and of
// harnesses built on it, as test/e2e does for the Go side. The binary is
// built from the repository this file lives in with `go build` (or taken
// from $COWFS_BIN); each workspace has its own state directory; cleanup()
// unmounts it and ends only the daemons it started, by pid.
//
// Needs root and /dev/fuse. fuseSkip() says why a test cannot run here;
// with COWFS_TEST_DISALLOW_SKIP set (CI) it throws instead, so a skip
// cannot pass for a success. For the remote mode, testCertificates makes a
// daemon's and clients' TLS directories with openssl; mount with the flags
// `--listen https://127.0.0.1:PORT --tls-dir CERTS.server`.

import { execFile } from "node:child_process";
import { existsSync, promises as fs, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { CowfsClient } from "./client.js";
import type { Status } from "./types.js";

export { testCertificates, type TestCertificates } from "./testcerts.js";

const run = promisify(execFile);

/** Why FUSE tests cannot run here (root and /dev/fuse are needed), or false if they can. */
export function fuseSkip(): string | false {
  let why: string | false = false;
  if (process.getuid?.() !== 0) {
    why = "needs root to mount";
  } else if (!existsSync("/dev/fuse")) {
    why = "needs /dev/fuse";
  }
  if (why && process.env.COWFS_TEST_DISALLOW_SKIP) {
    throw new Error(`cannot run here: ${why}`);
  }
  return why;
}

let built: Promise<string> | undefined;

/** The cowfs binary under test: $COWFS_BIN, or built once per process from this repository with `go build`. */
export function cowfsBinary(): Promise<string> {
  if (process.env.COWFS_BIN) {
    return Promise.resolve(process.env.COWFS_BIN);
  }
  built ??= (async () => {
    const repo = repositoryRoot();
    const dir = await fs.mkdtemp(path.join(tmpdir(), "cowfs-node-bin-"));
    const bin = path.join(dir, "cowfs");
    await run("go", ["build", "-o", bin, "./cmd/cowfs"], { cwd: repo });
    // "exit" handlers must be synchronous.
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    return bin;
  })();
  return built;
}

/** The cowfs repository: the nearest parent of this file with cowfs's go.mod. */
export function repositoryRoot(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const mod = path.join(dir, "go.mod");
    if (existsSync(mod) && /^module github\.com\/cowfs\/cowfs$/m.test(readFileSync(mod, "utf8"))) {
      return dir;
    }
    if (dir === path.dirname(dir)) {
      throw new Error("cannot find the cowfs repository above " + fileURLToPath(import.meta.url));
    }
  }
}

export interface TestWorkspaceOptions {
  /** The workspace directory's name (default "ws"). */
  name?: string;
  /** Files to create in the workspace before it is mounted: relative path → content. */
  seed?: Record<string, string>;
  /** Flags for `cowfs mount` (`--listen URL --tls-dir DIR`, say). */
  flags?: string[];
}

/** A temporary workspace with its own state directory, mounted by a real daemon. */
export class TestWorkspace {
  /** The temporary directory holding everything. */
  readonly root: string;
  /** The workspace (mounted in place). */
  readonly dir: string;
  /** COWFS_STATE_DIR for every command. */
  readonly state: string;
  /** The environment cowfs commands run with. */
  readonly env: NodeJS.ProcessEnv;
  /** Daemons this workspace started. */
  readonly pids: number[] = [];
  /** The control socket (known once mounted). */
  socket = "";

  private constructor(root: string, name: string) {
    this.root = root;
    this.dir = path.join(root, name);
    this.state = path.join(root, "state");
    this.env = { ...process.env, COWFS_STATE_DIR: this.state };
  }

  /** Creates the workspace (seeded) and mounts it. */
  static async create(opts: TestWorkspaceOptions = {}): Promise<TestWorkspace> {
    const root = await fs.mkdtemp(path.join(tmpdir(), "cowfs-node-"));
    const w = new TestWorkspace(root, opts.name ?? "ws");
    await fs.mkdir(w.dir);
    for (const [rel, content] of Object.entries(opts.seed ?? {})) {
      await fs.mkdir(path.dirname(w.path(rel)), { recursive: true });
      await fs.writeFile(w.path(rel), content);
    }
    try {
      await w.mount(...(opts.flags ?? []));
    } catch (err) {
      await w.cleanup();
      throw err;
    }
    return w;
  }

  /** The path of rel in the workspace. */
  path(rel: string): string {
    return path.join(this.dir, rel);
  }

  /** Runs the cowfs CLI on this workspace; rejects with its stderr if it fails. */
  async cowfs(...args: string[]): Promise<string> {
    const bin = await cowfsBinary();
    try {
      const { stdout } = await run(bin, ["-w", this.dir, ...args], { env: this.env });
      return stdout;
    } catch (err) {
      const e = err as Error & { stderr?: string };
      throw new Error(`cowfs ${args.join(" ")}: ${e.message}${e.stderr ? `\n${e.stderr}` : ""}`);
    }
  }

  /** Starts a background daemon for the workspace (again, after umount()). */
  async mount(...flags: string[]): Promise<void> {
    const bin = await cowfsBinary();
    await run(bin, ["mount", "--background", ...flags, this.dir], { env: this.env });
    const st = await this.status();
    this.pids.push(st.pid);
    this.socket = st.socket;
  }

  /** The daemon's status, through the CLI. */
  async status(): Promise<Status> {
    return JSON.parse(await this.cowfs("status", "--json")) as Status;
  }

  /** A client for the daemon. */
  client(): CowfsClient {
    return new CowfsClient(this.socket);
  }

  /** Runs a shell script in the workspace; rejects with its output if it fails. */
  async sh(script: string): Promise<string> {
    const { stdout } = await run("sh", ["-ec", script], { cwd: this.dir });
    return stdout;
  }

  /** Unmounts the workspace and waits for the daemon to exit. */
  async umount(): Promise<void> {
    await this.cowfs("umount");
    const pid = this.pids[this.pids.length - 1];
    for (let i = 0; pid !== undefined && alive(pid) && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * Unmounts, ends the daemons this workspace started (by pid) if they
   * outlive the unmount, detaches a mount left behind, and removes the
   * temporary directory. Reports what it had to force.
   */
  async cleanup(): Promise<string[]> {
    const forced: string[] = [];
    if (this.pids.some(alive) || mounted(this.dir)) {
      try {
        await this.cowfs("umount");
      } catch (err) {
        forced.push(`umount failed: ${(err as Error).message}`);
      }
    }
    for (const pid of this.pids) {
      for (let i = 0; alive(pid) && i < 40; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      if (alive(pid)) {
        forced.push(`daemon ${pid} still running after umount; killed`);
        process.kill(pid, "SIGKILL");
      }
    }
    if (mounted(this.dir)) {
      forced.push(`${this.dir} still mounted; detached`);
      await run("umount", ["-l", this.dir]).catch(() => undefined);
    }
    await fs.rm(this.root, { recursive: true, force: true });
    return forced;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether a FUSE filesystem is mounted at p. */
export function mounted(p: string): boolean {
  const mounts = readFileSync("/proc/self/mounts", "latin1");
  return mounts.split("\n").some((l) => {
    const f = l.split(" ");
    // Spaces, tabs, newlines and backslashes in paths are octal escapes there.
    const where = (f[1] ?? "").replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    return Buffer.from(where, "latin1").toString("utf8") === p && (f[2] ?? "").startsWith("fuse");
  });
}
