// HTTP/1.1 over the daemon's Unix socket with node:http's socketPath: no
// dependency beyond Node. One connection per request (no keep-alive
// agent), so an idle client holds nothing open and never keeps a process
// alive.

import * as http from "node:http";

import { apiError, ConnectionError, CowfsError, NoDaemonError } from "./errors.js";
import { checkSocket } from "./trust.js";
import type { ErrorBody } from "./types.js";

/** Error replies are read up to this size; the API's are tiny. */
const maxErrorBody = 1 << 20;

/** Connecting fails with these when no daemon listens on the socket. */
const notListening = new Set(["ENOENT", "ECONNREFUSED", "ENOTSOCK", "ENOTDIR"]);

export interface RequestOptions {
  /** A JSON body (sent with Content-Type: application/json). */
  body?: unknown;
  signal?: AbortSignal;
}

/**
 * Sends a request and resolves with the response once its status is
 * known to be a success; an error reply becomes the typed error for its
 * code. The caller reads (or destroys) the response. Before it connects,
 * it checks that only root and this user could have put the socket there
 * (checkSocket): Node cannot ask who listens, as the Go client does.
 */
export async function open(socket: string, method: string, pathAndQuery: string, opts: RequestOptions = {}): Promise<http.IncomingMessage> {
  await checkSocket(socket);
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
    const headers: http.OutgoingHttpHeaders = { Host: "cowfs" };
    if (payload !== undefined) {
      headers["Content-Type"] = "application/json";
      headers["Content-Length"] = payload.length;
    } else if (method !== "GET") {
      headers["Content-Length"] = 0;
    }
    let connected = false;
    const req = http.request({ socketPath: socket, method, path: pathAndQuery, headers, agent: false, signal: opts.signal });
    req.on("socket", (s) => s.once("connect", () => (connected = true)));
    req.on("error", (err: NodeJS.ErrnoException) => {
      if (err.name === "AbortError") {
        reject(err);
      } else if (!connected && err.code !== undefined && notListening.has(err.code)) {
        reject(new NoDaemonError(socket, err));
      } else {
        reject(new ConnectionError(`control socket ${socket}: ${method} ${pathAndQuery}: ${err.message}`, err));
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
        (err) => reject(new ConnectionError(`control socket ${socket}: reading an error reply: ${err.message}`, err)),
      );
    });
    req.end(payload);
  });
}

/** Sends a request and parses its JSON reply. */
export async function requestJSON<T>(socket: string, method: string, pathAndQuery: string, opts: RequestOptions = {}): Promise<T> {
  const res = await open(socket, method, pathAndQuery, opts);
  const buf = await readAll(res);
  try {
    return JSON.parse(buf.toString("utf8")) as T;
  } catch (err) {
    throw new ConnectionError(`control socket ${socket}: bad reply to ${method} ${pathAndQuery}: ${(err as Error).message}`, err);
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
