// Who answers on the socket. The Go client and the CLI ask the kernel who
// listens (SO_PEERCRED: root or their own uid, as a daemon is) before they
// send a request. Node cannot read SO_PEERCRED, so this client checks, before
// it connects, that nobody but root and this user could have put the socket
// at its path or swapped it for another: the socket, and every directory
// above it, must be owned by root or this user, and no directory may be
// writable by its group or by others — unless it is sticky, like /tmp: there
// only an entry's owner, the directory's owner and root may rename or remove
// the entry, and every entry beneath it is held to the same owners, so nobody
// else can replace it. A socket bound by another user is owned by them; to
// place or rename one into such a path they would need to write one of these
// directories; so the check holds between it and the connect. Directories
// must not be symlinks (a daemon refuses them too); the socket itself may be
// one, as the daemon makes for a workspace mounted elsewhere
// (`--mountpoint`), if it passes the same test, and its target is then
// checked in full.
//
// What it cannot see that SO_PEERCRED would: a socket of root's or this
// user's, at a trusted path, whose listening descriptor was handed to another
// process. Only root or this user could do that.

import { promises as fs, type Stats } from "node:fs";
import * as path from "node:path";

import { ConnectionError, CowfsError, NoDaemonError } from "./errors.js";

/** A socket of another user, or one another user could have put or swapped at its path: the client sends it nothing. */
export class ForeignSocketError extends CowfsError {
  /** The socket that was to be used. */
  readonly socket: string;
  /** The path that failed the check: the socket, a symlink to it, or a directory above either. */
  readonly component: string;

  constructor(socket: string, component: string, reason: string, uid: number) {
    const who = uid === 0 ? "root" : `root or uid ${uid}`;
    super(
      "foreign_socket",
      `refused: ${component} ${reason}, so another user could have put their own server at the control socket ${socket}; ` +
        `nothing was sent to it (the socket and each directory above it must be owned by ${who}, no symlinked directory, ` +
        `none writable by others but a sticky one such as /tmp)`,
    );
    this.socket = socket;
    this.component = component;
  }
}

/** How many symlinks to a socket are followed. */
const maxLinks = 8;

/**
 * Checks that only root and this user (uid) could have put the socket at
 * `socket`, as the module comment says. Throws ForeignSocketError if
 * not, and NoDaemonError if there is no socket (nothing to connect to).
 */
export async function checkSocket(socket: string, uid: number = process.geteuid?.() ?? 0): Promise<void> {
  let target = path.resolve(socket);
  for (let links = 0; ; links++) {
    const parts = target.split("/").filter((p) => p !== "");
    let cur = "/";
    checkEntry(socket, cur, await lstat(socket, cur), uid, false);
    for (let i = 0; i < parts.length; i++) {
      cur = path.join(cur, parts[i]!);
      const st = await lstat(socket, cur);
      const last = i === parts.length - 1;
      checkEntry(socket, cur, st, uid, last);
      if (!last) {
        continue;
      }
      if (st.isSymbolicLink()) {
        if (links >= maxLinks) {
          throw new ForeignSocketError(socket, cur, "leads through too many symlinks", uid);
        }
        target = path.resolve(path.dirname(cur), await fs.readlink(cur));
        break;
      }
      if (!st.isSocket()) {
        throw new NoDaemonError(socket); // connecting would fail anyway
      }
      return;
    }
    if (parts.length === 0) {
      throw new NoDaemonError(socket); // "/" is no socket
    }
  }
}

/** lstat, with a missing path meaning no daemon: nothing could be trusted to appear there before the connect. */
async function lstat(socket: string, p: string): Promise<Stats> {
  try {
    return await fs.lstat(p);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new NoDaemonError(socket, err);
    }
    throw new ConnectionError(`control socket ${socket}: ${(err as Error).message}`, err);
  }
}

/** Applies the rule to one entry on the way; last: the socket's own name. */
function checkEntry(socket: string, p: string, st: Stats, uid: number, last: boolean): void {
  if (st.uid !== 0 && st.uid !== uid) {
    throw new ForeignSocketError(socket, p, `is owned by uid ${st.uid}`, uid);
  }
  if (last) {
    return;
  }
  if (st.isSymbolicLink()) {
    throw new ForeignSocketError(socket, p, "is a symlink", uid);
  }
  if (!st.isDirectory()) {
    throw new NoDaemonError(socket);
  }
  if ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0) {
    throw new ForeignSocketError(socket, p, `is writable by its group or by others (mode ${(st.mode & 0o7777).toString(8).padStart(4, "0")})`, uid);
  }
}
