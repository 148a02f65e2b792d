// Typed errors. Every error reply of the control socket,
// {"error": {"code", "message", ...}}, becomes an instance of the class for its
// code, so a harness can write `if (err instanceof BusyError)`; each keeps
// the API's code and message. Failing to reach a daemon at all is a
// NoDaemonError.

import type { ErrorBody, ErrorCode } from "./types.js";

/**
 * Codes of errors that do not come from the API: no daemon answers, the
 * connection broke, the socket is one another user could have put there
 * (ForeignSocketError, in trust.ts), or a remote daemon's TLS handshake
 * failed (TLSError).
 */
export type ClientErrorCode = "no_daemon" | "connection" | "foreign_socket" | "tls";

/** The base of every error this package throws about the daemon. */
export class CowfsError extends Error {
  /** The API's error code, or a client-side one. */
  readonly code: ErrorCode | ClientErrorCode;
  /** The HTTP status of the reply (0 when there was none). */
  readonly status: number;

  constructor(code: ErrorCode | ClientErrorCode, message: string, status = 0, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }
}

/** `bad_request`: malformed request, bad parameter, a path that leaves the workspace. */
export class BadRequestError extends CowfsError {}

/** `forbidden`: this uid may not use the socket. */
export class ForbiddenError extends CowfsError {}

/** `not_found`: no such turn, step, path or endpoint. */
export class NotFoundError extends CowfsError {}

/** `busy`: a turn is open and the request needs none, or another rollback runs. */
export class BusyError extends CowfsError {}

/** `conflict`: the request contradicts the state (no open turn, id in use, nothing to unrevert). */
export class ConflictError extends CowfsError {}

/** `internal`: cowfs failed; the daemon's log says why. */
export class InternalError extends CowfsError {}

/**
 * `out_of_window`: the turn has left the rollback window. `oldest` and
 * `latest` are the range that can be reached, as the error reply's fields
 * of the same names give it (the message's words are for people).
 */
export class OutOfWindowError extends CowfsError {
  /** The oldest turn a rollback can reach. */
  readonly oldest?: number;
  /** The latest turn a rollback can reach. */
  readonly latest?: number;

  constructor(code: ErrorCode, message: string, status = 0, range: Pick<ErrorBody, "oldest" | "latest"> = {}) {
    super(code, message, status);
    if (typeof range.oldest === "number") this.oldest = range.oldest;
    if (typeof range.latest === "number") this.latest = range.latest;
  }
}

/**
 * No daemon answers on the socket (nothing is mounted there, or the daemon
 * died), or none accepts connections at a remote's address.
 */
export class NoDaemonError extends CowfsError {
  /** The socket that was tried, or the remote's URL. */
  readonly socket: string;

  constructor(socket: string, cause?: unknown) {
    const where = socket.startsWith("https://") ? `answers at ${socket}` : `is running for this workspace (socket ${socket})`;
    super("no_daemon", `no cowfs daemon ${where}`, 0, { cause });
    this.socket = socket;
  }
}

/**
 * A remote daemon's TLS handshake failed: its certificate did not verify
 * against ca.pem (or does not name the URL's host), it refused this
 * client's certificate (another CA's, expired, none), or the client's own
 * TLS material could not be read. Nothing was sent; trying again would
 * only fail again, so an event stream stops with it.
 */
export class TLSError extends CowfsError {
  /** The remote's URL. */
  readonly remote: string;

  constructor(remote: string, message: string, cause?: unknown) {
    super("tls", `${remote}: ${message}`, 0, { cause });
    this.remote = remote;
  }
}

/** The connection to the daemon broke during a request or a stream. */
export class ConnectionError extends CowfsError {
  constructor(message: string, cause?: unknown) {
    super("connection", message, 0, { cause });
  }
}

const byCode: Record<Exclude<ErrorCode, "out_of_window">, new (code: ErrorCode, message: string, status: number) => CowfsError> = {
  bad_request: BadRequestError,
  forbidden: ForbiddenError,
  not_found: NotFoundError,
  busy: BusyError,
  conflict: ConflictError,
  internal: InternalError,
};

/** The typed error for an error reply's body. */
export function apiError(body: ErrorBody, status: number): CowfsError {
  if (body.code === "out_of_window") {
    return new OutOfWindowError(body.code, body.message, status, body);
  }
  const cls = byCode[body.code];
  if (cls === undefined) {
    // A code this client does not know yet: the API may add codes.
    return new CowfsError(body.code, body.message, status);
  }
  return new cls(body.code, body.message, status);
}
