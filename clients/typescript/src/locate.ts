// Finding a workspace's control socket from a path, exactly as the CLI
// does (daemon/location.go): the state root is $COWFS_STATE_DIR, or
// /var/lib/cowfs for root, or $XDG_STATE_HOME/cowfs, or
// ~/.local/state/cowfs; a workspace's state directory in it is
// NAME-HASH, NAME its base name with runs of unsafe characters replaced by
// "_" (at most 32 bytes) and HASH the first 6 bytes of the SHA-256 of its
// absolute path with symlinks resolved, in hex. A path inside a mounted
// workspace finds that workspace: the nearest parent whose socket exists.
// With $COWFS_SOCKET_DIR set (a container sharing only its sockets with
// the host), the socket is NAME-HASH.sock there instead of ctl.sock in
// the state directory.
//
// With $COWFS_REMOTE set (https://HOST:PORT, a daemon's TLS listener on
// another machine), as for the CLI, that daemon is the one to talk to,
// whatever the path, with the client certificate in $COWFS_TLS_DIR
// (endpointFor).
//
// test/locate.test.ts checks the result against the real daemon's own
// idea of its socket.

import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import { homedir } from "node:os";
import * as path from "node:path";

import { parseRemote, type Remote } from "./remote.js";
import type { Endpoint } from "./transport.js";

/** Where one workspace's state lives. */
export interface Location {
  /** The workspace: absolute, symlinks resolved. */
  workspace: string;
  /** Its state directory. */
  dir: string;
  /** Its control socket, `dir/ctl.sock` or `$COWFS_SOCKET_DIR/NAME-HASH.sock`. */
  socket: string;
}

/** What fits in sockaddr_un.sun_path. */
const maxSocketPath = 107;

/** The directory per-workspace state directories live in. */
export function stateRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.COWFS_STATE_DIR) {
    return env.COWFS_STATE_DIR;
  }
  if (process.getuid?.() === 0) {
    return "/var/lib/cowfs";
  }
  if (env.XDG_STATE_HOME) {
    return path.join(env.XDG_STATE_HOME, "cowfs");
  }
  return path.join(homedir(), ".local", "state", "cowfs");
}

/** The location of the workspace at p (which need not be mounted). */
export async function locate(p: string, env: NodeJS.ProcessEnv = process.env): Promise<Location> {
  const abs = await canonical(p);
  const sum = createHash("sha256").update(abs).digest("hex").slice(0, 12);
  // Go's filepath.Base("/") is "/", which the replacement turns into "_";
  // the replaced name is ASCII, so slicing characters slices bytes.
  const base = abs === "/" ? "/" : path.basename(abs);
  const name = base.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 32);
  const dir = path.join(stateRoot(env), `${name}-${sum}`);
  const socket = env.COWFS_SOCKET_DIR ? path.join(env.COWFS_SOCKET_DIR, `${name}-${sum}.sock`) : path.join(dir, "ctl.sock");
  const loc = { workspace: abs, dir, socket };
  if (Buffer.byteLength(loc.socket) > maxSocketPath) {
    throw new Error(`state directory ${dir} is too deep for a Unix socket path; set COWFS_STATE_DIR to a shorter one`);
  }
  return loc;
}

/**
 * The location of the workspace that contains p: p itself or the nearest
 * parent with a daemon's socket; p's own location if none has one.
 */
export async function findWorkspace(p: string, env: NodeJS.ProcessEnv = process.env): Promise<Location> {
  const own = await locate(p, env);
  for (let dir = own.workspace; ; dir = path.dirname(dir)) {
    let loc: Location | undefined;
    try {
      loc = await locate(dir, env);
    } catch {
      // Too deep for a socket: no daemon can listen there.
    }
    if (loc !== undefined) {
      try {
        await fs.stat(loc.socket);
        return loc;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
          throw err;
        }
      }
    }
    if (dir === "/") {
      return own;
    }
  }
}

/** The socket of the daemon serving the workspace that contains p. */
export async function socketFor(p: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return (await findWorkspace(p, env)).socket;
}

/**
 * The daemon to talk to about the workspace that contains p: the remote
 * in $COWFS_REMOTE, with the TLS directory in $COWFS_TLS_DIR, if it is
 * set (p is then not looked at), or else the socket of socketFor(p).
 */
export async function endpointFor(p: string, env: NodeJS.ProcessEnv = process.env): Promise<Endpoint> {
  const remote = remoteFromEnv(env);
  return remote ?? (await socketFor(p, env));
}

/** The remote that $COWFS_REMOTE and $COWFS_TLS_DIR name, if the first is set. */
export function remoteFromEnv(env: NodeJS.ProcessEnv = process.env): Remote | undefined {
  if (!env.COWFS_REMOTE) {
    return undefined;
  }
  if (!env.COWFS_TLS_DIR) {
    throw new TypeError(`COWFS_REMOTE is ${env.COWFS_REMOTE} but COWFS_TLS_DIR is not set: a remote daemon takes only clients with a certificate`);
  }
  return parseRemote(env.COWFS_REMOTE, { tlsDir: env.COWFS_TLS_DIR });
}

/**
 * p absolute with symlinks resolved. The last component is kept as it is
 * if it cannot be resolved (a stale mount answers ENOTCONN), as Go's
 * filepath.EvalSymlinks fallback in the CLI does.
 */
async function canonical(p: string): Promise<string> {
  const abs = path.resolve(p);
  try {
    return await fs.realpath(abs);
  } catch {
    const dir = await fs.realpath(path.dirname(abs));
    return path.join(dir, path.basename(abs));
  }
}
