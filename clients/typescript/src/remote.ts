// A daemon on another machine: `cowfs mount --listen https://ADDR:PORT
// --tls-dir DIR` serves the control socket's API over TCP with mutual TLS
// 1.3. The client holds a directory laid out as the CLI's
// (`--tls-dir`, $COWFS_TLS_DIR): ca.pem verifies the daemon, cert.pem and
// key.pem are the client's own certificate, signed by the CA the daemon
// trusts. There is nothing else to check: the certificates are the trust,
// as SO_PEERCRED (or trust.ts's path check) is for the socket. So the
// connection verifies the daemon's certificate against ca.pem only (not
// the system's CAs), with its name or IP address matched against the
// URL's host, never accepts less than TLS 1.3, and always presents the
// client's certificate: a remote without one is refused here, before
// anything is sent.
//
// A directory is read again for every connection, so certificates
// renewed on disk take effect without a new client, as the daemon
// reloads its own on SIGHUP. It is held to the daemon's rules for its
// own (ctl/tlsdir.go), since whoever could change ca.pem could put their
// own server in the daemon's place: the directory and each file must be
// root's or this user's and writable by nobody else (the directory may be
// sticky instead), and key.pem unreadable by others. Each file is checked
// on the descriptor it is read from. Unlike the daemon, which cannot be
// led out of the directory, the client follows a symlink anywhere (a
// Kubernetes Secret volume's files are links into ..data) and checks what
// it reaches.

import { constants, promises as fs } from "node:fs";
import { isIP } from "node:net";
import * as path from "node:path";
import type * as tls from "node:tls";

import { TLSError } from "./errors.js";

/** A client's TLS material: PEM text or buffers. */
export interface TLSMaterial {
  /** The CA that signed the daemon's certificate (ca.pem). */
  ca: string | Buffer;
  /** The client's certificate (cert.pem), signed by the CA the daemon trusts. */
  cert: string | Buffer;
  /** The client's private key (key.pem). */
  key: string | Buffer;
}

/** A daemon's TLS listener and how to reach it. */
export interface Remote {
  /** `https://HOST:PORT`, as given. */
  url: string;
  /** The host to connect to (an IPv6 address without its brackets). */
  host: string;
  port: number;
  /** The directory holding ca.pem, cert.pem and key.pem. */
  tlsDir?: string;
  /** The material itself, instead of a directory. */
  tls?: TLSMaterial;
}

/** The files of a TLS directory, as the CLI names them. */
export const tlsFiles = { ca: "ca.pem", cert: "cert.pem", key: "key.pem" } as const;

/**
 * Checks a remote's URL and TLS source. Only `https://HOST:PORT` is taken:
 * the API is never sent in plaintext, and a port must be given (the
 * daemon has no default one).
 */
export function parseRemote(url: string, source: { tlsDir?: string; tls?: TLSMaterial }): Remote {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new TypeError(`remote ${JSON.stringify(url)}: not a URL; want https://HOST:PORT`);
  }
  if (u.protocol !== "https:") {
    throw new TypeError(`remote ${url}: the scheme must be https (the daemon serves only mutual TLS)`);
  }
  if (u.port === "") {
    throw new TypeError(`remote ${url}: no port; want https://HOST:PORT`);
  }
  if ((u.pathname !== "/" && u.pathname !== "") || u.search !== "" || u.hash !== "" || u.username !== "" || u.password !== "") {
    throw new TypeError(`remote ${url}: want https://HOST:PORT, nothing more`);
  }
  if (source.tlsDir === undefined && source.tls === undefined) {
    throw new TypeError(`remote ${url}: no client certificate; give tlsDir (or set COWFS_TLS_DIR) or tls: { ca, cert, key }`);
  }
  if (source.tlsDir !== undefined && source.tls !== undefined) {
    throw new TypeError(`remote ${url}: give tlsDir or tls, not both`);
  }
  if (source.tls !== undefined) {
    for (const k of ["ca", "cert", "key"] as const) {
      const v = source.tls[k];
      if (v === undefined || v.length === 0) {
        throw new TypeError(`remote ${url}: tls.${k} is empty`);
      }
    }
  }
  const host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
  return { url, host, port: Number(u.port), ...source };
}

/**
 * The TLS options of one connection to the remote: its material (read
 * from the directory now, if it has one) and the checks that make the
 * certificates the only trust.
 */
export async function tlsOptions(r: Remote): Promise<tls.ConnectionOptions> {
  let m: TLSMaterial;
  try {
    m = r.tls ?? (await readTLSDir(r.tlsDir!));
  } catch (err) {
    throw new TLSError(r.url, (err as Error).message, err);
  }
  return {
    host: r.host,
    port: r.port,
    ca: m.ca,
    cert: m.cert,
    key: m.key,
    minVersion: "TLSv1.3",
    rejectUnauthorized: true,
    // SNI carries host names only; an address is matched against the
    // certificate's IP SANs by the default checkServerIdentity.
    ...(isIP(r.host) === 0 ? { servername: r.host } : {}),
  };
}

/** Reads ca.pem, cert.pem and key.pem from dir, checked as the module comment says. */
export async function readTLSDir(dir: string, uid: number = process.geteuid?.() ?? 0): Promise<TLSMaterial> {
  const st = await fs.stat(dir).catch((err: Error) => {
    throw new Error(`TLS directory ${dir}: ${err.message}`, { cause: err });
  });
  checkOwner(dir, "directory", st.uid, uid);
  if (!st.isDirectory()) {
    throw new Error(`TLS directory ${dir} is not a directory`);
  }
  if ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0) {
    throw new Error(`TLS directory ${dir} is writable by its group or others (mode ${mode(st.mode)}): they could replace the certificates`);
  }
  const [ca, cert, key] = await Promise.all([readFile(dir, tlsFiles.ca, false, uid), readFile(dir, tlsFiles.cert, false, uid), readFile(dir, tlsFiles.key, true, uid)]);
  return { ca, cert, key };
}

/** Reads one file of a TLS directory, checked on its descriptor. */
async function readFile(dir: string, name: string, secret: boolean, uid: number): Promise<Buffer> {
  const p = path.join(dir, name);
  let fh: fs.FileHandle | undefined;
  try {
    // O_NONBLOCK: a FIFO put there does not hang the open.
    fh = await fs.open(p, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    const st = await fh.stat();
    if (!st.isFile()) {
      throw new Error(`${p} is not a regular file`);
    }
    checkOwner(p, "file", st.uid, uid);
    if ((st.mode & 0o022) !== 0) {
      throw new Error(`${p} is writable by its group or others (mode ${mode(st.mode)})`);
    }
    if (secret && (st.mode & 0o007) !== 0) {
      throw new Error(`the private key ${p} is open to others (mode ${mode(st.mode)}); chmod 600 ${p}`);
    }
    return await fh.readFile();
  } catch (err) {
    throw new Error(`TLS directory ${dir}: ${(err as Error).message}`, { cause: err });
  } finally {
    await fh?.close();
  }
}

function checkOwner(p: string, what: string, owner: number, uid: number): void {
  if (owner !== 0 && owner !== uid) {
    throw new Error(`the ${what} ${p} is owned by uid ${owner}, not by root or uid ${uid}`);
  }
}

function mode(m: number): string {
  return (m & 0o7777).toString(8).padStart(4, "0");
}
