// HTTP/1.1 to a daemon: over its Unix socket with node:http's socketPath,
// or to its TLS listener with node:https (remote.ts): no dependency beyond
// Node. One connection per request (no keep-alive agent), so an idle
// client holds nothing open and never keeps a process alive.
//
// Before a request goes out, the server is checked: a socket's path with
// checkSocket (trust.ts), a remote's certificate in the TLS handshake. A
// handshake that fails, on either side, is a TLSError, which nobody
// retries: a daemon that refuses this client's certificate refuses it
// again. With TLS 1.3 the daemon checks the client's certificate after the
// client has finished its side of the handshake, so its refusal (an alert:
// certificate required, unknown CA, certificate expired) arrives when the
// reply is awaited; it is a TLSError all the same.

import * as http from "node:http";
import * as https from "node:https";

import { apiError, ConnectionError, CowfsError, NoDaemonError, TLSError } from "./errors.js";
import { tlsOptions, type Remote } from "./remote.js";
import { checkSocket } from "./trust.js";
import type { ErrorBody } from "./types.js";

/** A daemon to talk to: its control socket's path, or a remote TLS listener (parseRemote). */
export type Endpoint = string | Remote;

/** Says which daemon, in errors. */
export function describe(to: Endpoint): string {
  return typeof to === "string" ? `control socket ${to}` : `cowfs daemon at ${to.url}`;
}

/** Error replies are read up to this size; the API's are tiny. */
const maxErrorBody = 1 << 20;

/** Connecting fails with these when no daemon listens on the socket. */
const notListening = new Set(["ENOENT", "ECONNREFUSED", "ENOTSOCK", "ENOTDIR"]);

/** A connection that breaks under a handshake: the daemon went away, not a failed check. */
const broken = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ERR_STREAM_PREMATURE_CLOSE"]);

export interface RequestOptions {
  /** A JSON body (sent with Content-Type: application/json). */
  body?: unknown;
  signal?: AbortSignal;
}

/**
 * Sends a request and resolves with the response once its status is
 * known to be a success; an error reply becomes the typed error for its
 * code. The caller reads (or destroys) the response. Before it connects
 * to a socket, it checks that only root and this user could have put the
 * socket there (checkSocket): Node cannot ask who listens, as the Go
 * client does. A remote is checked by its certificate (remote.ts).
 */
export async function open(to: Endpoint, method: string, pathAndQuery: string, opts: RequestOptions = {}): Promise<http.IncomingMessage> {
  const where = describe(to);
  let tlsOpts: https.RequestOptions | undefined;
  if (typeof to === "string") {
    await checkSocket(to);
  } else {
    tlsOpts = await tlsOptions(to);
  }
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
    // A remote gets its own HOST:PORT (node's default); the socket has no host.
    const headers: http.OutgoingHttpHeaders = tlsOpts === undefined ? { Host: "cowfs" } : {};
    if (payload !== undefined) {
      headers["Content-Type"] = "application/json";
      headers["Content-Length"] = payload.length;
    } else if (method !== "GET") {
      headers["Content-Length"] = 0;
    }
    let connected = false;
    let secured = false;
    let req: http.ClientRequest;
    const common = { method, path: pathAndQuery, headers, agent: false, signal: opts.signal };
    try {
      req = tlsOpts === undefined ? http.request({ socketPath: to as string, ...common }) : https.request({ ...tlsOpts, ...common });
    } catch (err) {
      // A key or certificate node cannot load.
      reject(typeof to === "string" ? err : new TLSError(to.url, (err as Error).message, err));
      return;
    }
    req.on("socket", (s) => {
      s.once("connect", () => (connected = true));
      s.once("secureConnect", () => (secured = true));
    });
    req.on("error", (err: NodeJS.ErrnoException) => {
      if (err.name === "AbortError") {
        reject(err);
      } else if (!connected && err.code !== undefined && notListening.has(err.code)) {
        reject(new NoDaemonError(typeof to === "string" ? to : to.url, err));
      } else if (typeof to !== "string" && connected && isTLSFailure(err, secured)) {
        reject(new TLSError(to.url, tlsFailure(err), err));
      } else {
        reject(new ConnectionError(`${where}: ${method} ${pathAndQuery}: ${err.message}`, err));
      }
    });
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      if (status < 300) {
        resolve(res);
        return;
      }
      readAll(res, maxErrorBody).then(
        (buf) => reject(errorOf(status, res.statusMessage ?? "", buf)),
        (err) => reject(new ConnectionError(`${where}: reading an error reply: ${err.message}`, err)),
      );
    });
    req.end(payload);
  });
}

/**
 * Whether err is a TLS handshake's failure: any error but a broken
 * connection before the handshake completed (a certificate that did not
 * verify, a protocol the daemon would not speak), and the daemon's alert
 * after it (its refusal of this client's certificate).
 */
function isTLSFailure(err: NodeJS.ErrnoException, secured: boolean): boolean {
  if (err.code?.startsWith("ERR_SSL_") || err.code?.startsWith("ERR_TLS_")) {
    return true;
  }
  return !secured && !(err.code !== undefined && broken.has(err.code));
}

/** A TLS failure in words: who refused what. */
function tlsFailure(err: NodeJS.ErrnoException): string {
  // OpenSSL's words for an alert the daemon sent: "tlsv13 alert certificate required".
  const alert = / alert ([a-z0-9 ]+?)(?::|$)/m.exec(err.message)?.[1];
  if (alert !== undefined) {
    const hint = /certificate|unknown ca|access denied/.test(alert) ? ": it takes only an unexpired client certificate signed by its CA" : "";
    return `the daemon refused the TLS connection (${alert})${hint}`;
  }
  if (err.code?.startsWith("ERR_SSL_")) {
    return `TLS handshake failed: ${err.message}`;
  }
  // Node's certificate checks: UNABLE_TO_VERIFY_LEAF_SIGNATURE, CERT_HAS_EXPIRED, ERR_TLS_CERT_ALTNAME_INVALID ...
  return `the daemon's certificate is not trusted (${err.message}): it must be signed by the CA in ca.pem and name the URL's host`;
}

/** Sends a request and parses its JSON reply. */
export async function requestJSON<T>(to: Endpoint, method: string, pathAndQuery: string, opts: RequestOptions = {}): Promise<T> {
  const res = await open(to, method, pathAndQuery, opts);
  const buf = await readAll(res);
  try {
    return JSON.parse(buf.toString("utf8")) as T;
  } catch (err) {
    throw new ConnectionError(`${describe(to)}: bad reply to ${method} ${pathAndQuery}: ${(err as Error).message}`, err);
  }
}

/** Reads a response to its end (at most limit bytes, if given). */
export async function readAll(res: http.IncomingMessage, limit = Infinity): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of res) {
    const b = chunk as Buffer;
    if (n + b.length > limit) {
      chunks.push(b.subarray(0, limit - n));
      res.destroy();
      break;
    }
    chunks.push(b);
    n += b.length;
  }
  return Buffer.concat(chunks);
}

/** The error for an error reply: {"error": {code, message}}, or else an internal error naming the status. */
function errorOf(status: number, statusText: string, buf: Buffer): CowfsError {
  const text = buf.toString("utf8");
  try {
    const body = JSON.parse(text) as { error?: ErrorBody };
    if (body.error && typeof body.error.code === "string") {
      return apiError(body.error, status);
    }
  } catch {
    // Not the API's error shape: fall through.
  }
  return apiError({ code: "internal", message: `${status} ${statusText}: ${text.trim()}` }, status);
}
