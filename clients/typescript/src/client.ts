// CowfsClient: one method per endpoint of docs/api.md, typed with the
// wire types of types.ts. Errors are the typed errors of errors.ts.

import { eventStream, type EventsOptions, type EventStream } from "./events.js";
import { socketFor } from "./locate.js";
import { pathQuery } from "./paths.js";
import { open, readAll, requestJSON } from "./transport.js";
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

/** A client for one daemon's control socket. */
export class CowfsClient {
  /** The control socket's path. */
  readonly socket: string;

  constructor(socket: string) {
    this.socket = socket;
  }

  /**
   * A client for the workspace that contains path (default: the current
   * directory), found as the CLI finds it: the workspace itself or the
   * nearest parent with a daemon.
   */
  static async forWorkspace(path: string = process.cwd()): Promise<CowfsClient> {
    return new CowfsClient(await socketFor(path));
  }

  /** `GET /v1/status`. */
  status(opts?: CallOptions): Promise<Status> {
    return requestJSON(this.socket, "GET", "/v1/status", opts);
  }

  /** `POST /v1/turns`: begin a turn. BusyError if one is open, ConflictError if the id is in use. */
  beginTurn(req: BeginTurnRequest = {}, opts?: CallOptions): Promise<Turn> {
    return requestJSON(this.socket, "POST", "/v1/turns", { ...opts, body: req });
  }

  /**
   * `POST /v1/turns/current/steps`: a step (a tool call) of the open turn
   * begins; `name` says what it is (the tool's name). ConflictError if no
   * turn is open.
   */
  beginStep(id: string, opts: CallOptions & { name?: string } = {}): Promise<StepStarted> {
    const body = opts.name === undefined ? { id } : { id, name: opts.name };
    return requestJSON(this.socket, "POST", "/v1/turns/current/steps", { signal: opts.signal, body });
  }

  /** `POST /v1/turns/current/end`: end the open turn. ConflictError if none is open. */
  endTurn(opts?: CallOptions): Promise<Turn> {
    return requestJSON(this.socket, "POST", "/v1/turns/current/end", { ...opts, body: {} });
  }

  /** `GET /v1/turns`: the turns in the window, oldest first. */
  turns(opts?: CallOptions): Promise<TurnList> {
    return requestJSON(this.socket, "GET", "/v1/turns", opts);
  }

  /** `GET /v1/turns/{ref}`: one turn and its changes (only one step's, with `step`). */
  turn(ref: TurnRef, opts: CallOptions & { step?: string } = {}): Promise<TurnDetail> {
    const q = opts.step === undefined ? "" : `?${new URLSearchParams({ step: opts.step })}`;
    return requestJSON(this.socket, "GET", `/v1/turns/${encodeURIComponent(String(ref))}${q}`, opts);
  }

  /** `GET /v1/turns/{ref}/steps`: a turn's steps in order, each with what it changed. */
  steps(ref: TurnRef, opts?: CallOptions): Promise<StepList> {
    return requestJSON(this.socket, "GET", `/v1/turns/${encodeURIComponent(String(ref))}/steps`, opts);
  }

  /** `GET /v1/outside`: the changes made while no turn was open. */
  outside(opts?: CallOptions): Promise<OutsideChanges> {
    return requestJSON(this.socket, "GET", "/v1/outside", opts);
  }

  /**
   * `GET /v1/events`: the event stream, resumable across reconnects and
   * daemon restarts (see EventsOptions). Iterate it with `for await`.
   */
  events(opts: EventsOptions = {}): EventStream {
    return eventStream(this.socket, opts);
  }

  /** `GET /v1/diff`: what changed from the start of `from` to its end, the start of `to`, or now. */
  diff(req: DiffRequest, opts?: CallOptions): Promise<Diff> {
    const q = new URLSearchParams({ from: String(req.from) });
    if (req.to !== undefined) q.set("to", String(req.to));
    if (req.step !== undefined) q.set("step", req.step);
    if (req.stat) q.set("stat", "1");
    return requestJSON(this.socket, "GET", `/v1/diff?${q}`, opts);
  }

  /** `GET /v1/content`: the bytes path held when turn `at` began. NotFoundError if it did not exist then. */
  async content(at: TurnRef, path: string, opts?: CallOptions): Promise<Buffer> {
    // The path's bytes, percent-encoded: it may hold escaped non-UTF-8 bytes.
    const q = `${new URLSearchParams({ at: String(at) })}&path=${pathQuery(path)}`;
    const res = await open(this.socket, "GET", `/v1/content?${q}`, opts);
    return readAll(res);
  }

  /** `POST /v1/rollback`: roll back to before a turn, or (dry_run) plan it. */
  rollback(req: RollbackRequest, opts?: CallOptions): Promise<RollbackResult> {
    return requestJSON(this.socket, "POST", "/v1/rollback", { ...opts, body: req });
  }

  /** `POST /v1/unrevert`: undo the last rollback since the last turn began. ConflictError if there is none. */
  unrevert(req: UnrevertRequest = {}, opts?: CallOptions): Promise<RollbackResult> {
    return requestJSON(this.socket, "POST", "/v1/unrevert", { ...opts, body: req });
  }

  /** `GET /v1/markers`: the conversation truncation markers, oldest turn first. */
  markers(opts?: CallOptions): Promise<MarkerList> {
    return requestJSON(this.socket, "GET", "/v1/markers", opts);
  }

  /**
   * `DELETE /v1/journal`: stop the daemon and remove the workspace's
   * journal, state directory and private directory (its files stay).
   * BusyError while a turn is open or processes use the mount.
   */
  purge(opts?: CallOptions): Promise<Purged> {
    return requestJSON(this.socket, "DELETE", "/v1/journal", opts);
  }

  /** `POST /v1/shutdown`: unmount the workspace and stop the daemon. */
  async shutdown(opts?: CallOptions): Promise<void> {
    await requestJSON(this.socket, "POST", "/v1/shutdown", { ...opts, body: {} });
  }
}
