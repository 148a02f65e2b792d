// CowfsClient: one method per endpoint of docs/api.md, typed with the
// wire types of types.ts, to a daemon's control socket or, over mutual
// TLS, to its listener on another machine (remote.ts). Errors are the
// typed errors of errors.ts.

import { eventStream, type EventsOptions, type EventStream } from "./events.js";
import { endpointFor } from "./locate.js";
import { pathQuery } from "./paths.js";
import { parseRemote, type TLSMaterial } from "./remote.js";
import { open, readAll, requestJSON, type Endpoint } from "./transport.js";
import type {
  BeginTurnRequest,
  Diff,
  DiffRequest,
  MarkerList,
  OutsideChanges,
  Purged,
  RollbackRequest,
  RollbackResult,
  Status,
  StepList,
  StepStarted,
  Turn,
  TurnDetail,
  TurnList,
  TurnRef,
  UnrevertRequest,
} from "./types.js";

/** Options every call takes. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Which daemon a client talks to: a socket, or a remote with its client certificate. */
export interface ClientOptions {
  /** The control socket's path. */
  socket?: string;
  /**
   * A daemon's TLS listener, `https://HOST:PORT` (`cowfs mount --listen`),
   * instead of a socket. The connection takes TLS 1.3 and the client's
   * certificate; the daemon's must be signed by the CA in ca.pem and name
   * HOST.
   */
  remote?: string;
  /** With remote: the directory holding ca.pem, cert.pem and key.pem, as the CLI's --tls-dir (default: $COWFS_TLS_DIR). */
  tlsDir?: string;
  /** With remote: the PEM material itself, instead of a directory. */
  tls?: TLSMaterial;
}

/** A client for one daemon, through its control socket or its TLS listener. */
export class CowfsClient {
  /** The control socket's path ("" for a remote client). */
  readonly socket: string;
  /** The remote's URL (undefined for a socket client). */
  readonly remote: string | undefined;
  /** Where requests go: the socket's path, or the remote and its TLS material. */
  readonly endpoint: Endpoint;

  /**
   * A client for the daemon at a socket (`new CowfsClient(path)` or
   * `{ socket }`) or at a remote (`{ remote, tlsDir }` or
   * `{ remote, tls: { ca, cert, key } }`). A remote without TLS material
   * is a TypeError: the daemon serves no anonymous client.
   */
  constructor(target: string | ClientOptions | Endpoint) {
    if (typeof target === "string") {
      this.endpoint = target;
    } else if ("url" in target) {
      this.endpoint = target;
    } else if (target.remote !== undefined) {
      if (target.socket !== undefined) {
        throw new TypeError("give socket or remote, not both");
      }
      const tlsDir = target.tlsDir ?? (target.tls === undefined ? process.env.COWFS_TLS_DIR || undefined : undefined);
      this.endpoint = parseRemote(target.remote, { tlsDir, tls: target.tls });
    } else if (target.socket !== undefined) {
      this.endpoint = target.socket;
    } else {
      throw new TypeError("give a socket or a remote");
    }
    this.socket = typeof this.endpoint === "string" ? this.endpoint : "";
    this.remote = typeof this.endpoint === "string" ? undefined : this.endpoint.url;
  }

  /**
   * A client for the workspace that contains path (default: the current
   * directory), found as the CLI finds it: the workspace itself or the
   * nearest parent with a daemon; or, with $COWFS_REMOTE set, that remote
   * daemon with the client certificate in $COWFS_TLS_DIR.
   */
  static async forWorkspace(path: string = process.cwd(), env: NodeJS.ProcessEnv = process.env): Promise<CowfsClient> {
    return new CowfsClient(await endpointFor(path, env));
  }

  /** `GET /v1/status`. */
  status(opts?: CallOptions): Promise<Status> {
    return requestJSON(this.endpoint, "GET", "/v1/status", opts);
  }

  /** `POST /v1/turns`: begin a turn. BusyError if one is open, ConflictError if the id is in use. */
  beginTurn(req: BeginTurnRequest = {}, opts?: CallOptions): Promise<Turn> {
    return requestJSON(this.endpoint, "POST", "/v1/turns", { ...opts, body: req });
  }

  /**
   * `POST /v1/turns/current/steps`: a step (a tool call) of the open turn
   * begins; `name` says what it is (the tool's name). ConflictError if no
   * turn is open.
   */
  beginStep(id: string, opts: CallOptions & { name?: string } = {}): Promise<StepStarted> {
    const body = opts.name === undefined ? { id } : { id, name: opts.name };
    return requestJSON(this.endpoint, "POST", "/v1/turns/current/steps", { signal: opts.signal, body });
  }

  /** `POST /v1/turns/current/end`: end the open turn. ConflictError if none is open. */
  endTurn(opts?: CallOptions): Promise<Turn> {
    return requestJSON(this.endpoint, "POST", "/v1/turns/current/end", { ...opts, body: {} });
  }

  /** `GET /v1/turns`: the turns in the window, oldest first. */
  turns(opts?: CallOptions): Promise<TurnList> {
    return requestJSON(this.endpoint, "GET", "/v1/turns", opts);
  }

  /** `GET /v1/turns/{ref}`: one turn and its changes (only one step's, with `step`). */
  turn(ref: TurnRef, opts: CallOptions & { step?: string } = {}): Promise<TurnDetail> {
    const q = opts.step === undefined ? "" : `?${new URLSearchParams({ step: opts.step })}`;
    return requestJSON(this.endpoint, "GET", `/v1/turns/${encodeURIComponent(String(ref))}${q}`, opts);
  }

  /** `GET /v1/turns/{ref}/steps`: a turn's steps in order, each with what it changed. */
  steps(ref: TurnRef, opts?: CallOptions): Promise<StepList> {
    return requestJSON(this.endpoint, "GET", `/v1/turns/${encodeURIComponent(String(ref))}/steps`, opts);
  }

  /** `GET /v1/outside`: the changes made while no turn was open. */
  outside(opts?: CallOptions): Promise<OutsideChanges> {
    return requestJSON(this.endpoint, "GET", "/v1/outside", opts);
  }

  /**
   * `GET /v1/events`: the event stream, resumable across reconnects and
   * daemon restarts (see EventsOptions). Iterate it with `for await`.
   */
  events(opts: EventsOptions = {}): EventStream {
    return eventStream(this.endpoint, opts);
  }

  /** `GET /v1/diff`: what changed from the start of `from` to its end, the start of `to`, or now. */
  diff(req: DiffRequest, opts?: CallOptions): Promise<Diff> {
    const q = new URLSearchParams({ from: String(req.from) });
    if (req.to !== undefined) q.set("to", String(req.to));
    if (req.step !== undefined) q.set("step", req.step);
    if (req.stat) q.set("stat", "1");
    return requestJSON(this.endpoint, "GET", `/v1/diff?${q}`, opts);
  }

  /** `GET /v1/content`: the bytes path held when turn `at` began. NotFoundError if it did not exist then. */
  async content(at: TurnRef, path: string, opts?: CallOptions): Promise<Buffer> {
    // The path's bytes, percent-encoded: it may hold escaped non-UTF-8 bytes.
    const q = `${new URLSearchParams({ at: String(at) })}&path=${pathQuery(path)}`;
    const res = await open(this.endpoint, "GET", `/v1/content?${q}`, opts);
    return readAll(res);
  }

  /** `POST /v1/rollback`: roll back to before a turn, or (dry_run) plan it. */
  rollback(req: RollbackRequest, opts?: CallOptions): Promise<RollbackResult> {
    return requestJSON(this.endpoint, "POST", "/v1/rollback", { ...opts, body: req });
  }

  /** `POST /v1/unrevert`: undo the last rollback since the last turn began. ConflictError if there is none. */
  unrevert(req: UnrevertRequest = {}, opts?: CallOptions): Promise<RollbackResult> {
    return requestJSON(this.endpoint, "POST", "/v1/unrevert", { ...opts, body: req });
  }

  /** `GET /v1/markers`: the conversation truncation markers, oldest turn first. */
  markers(opts?: CallOptions): Promise<MarkerList> {
    return requestJSON(this.endpoint, "GET", "/v1/markers", opts);
  }

  /**
   * `DELETE /v1/journal`: stop the daemon and remove the workspace's
   * journal, state directory and private directory (its files stay).
   * BusyError while a turn is open or processes use the mount.
   */
  purge(opts?: CallOptions): Promise<Purged> {
    return requestJSON(this.endpoint, "DELETE", "/v1/journal", opts);
  }

  /** `POST /v1/shutdown`: unmount the workspace and stop the daemon. */
  async shutdown(opts?: CallOptions): Promise<void> {
    await requestJSON(this.endpoint, "POST", "/v1/shutdown", { ...opts, body: {} });
  }
}
