// History: the words TypeScript harness authors know from TanStack AI's
// git-shadow `snapshots()` plugin — beginTurn, step, endTurn, undo, redo,
// revert, unrevert, diff, onFileChanged, markers — on top of a cowfs
// daemon. A turn is one user message and the agent's answer; its anchor is
// that message's id, so every rewind says where the harness truncates (or,
// redoing, restores) its conversation. The file changes it reports come
// from feed.ts.

import { CowfsClient } from "./client.js";
import { BadRequestError, ConflictError, NotFoundError } from "./errors.js";
import { ChangeFeed, type FileChangedEvent, type RewindCause } from "./feed.js";
import type { TLSMaterial } from "./remote.js";
import type { AgentScope, DiffFile, Marker, PathAction, RollbackCounts, RollbackResult, Turn, TurnRef } from "./types.js";

export type { FileChange, FileChangedEvent, RewindCause } from "./feed.js";

/** A conversation truncation marker. */
export interface HistoryMarker {
  /** The turn rolled back to before. */
  turn: number;
  turnId?: string;
  /** Truncate the conversation here: this message and everything after it go. */
  messageId?: string;
  /** A line for the model: later messages were removed and the files restored. */
  note: string;
  createdAt: string;
}

/** What undo(), redo(), revert() and unrevert() did. */
export interface RewindResult {
  action: RewindCause;
  /** The turn rolled back to before (for redo and unrevert: the turn the undone rollback went back to). */
  turn: number;
  turnId?: string;
  /**
   * That turn's anchor. After undo and revert, the conversation now ends
   * just before this message (it and everything after it go, until the
   * next message makes that final). After redo and unrevert, it names the
   * message the undone rollback went back to: return the conversation to
   * where it stood before that rollback.
   */
  messageId?: string;
  /** After undo and revert: the marker left (messageId and a note for the model). */
  marker?: HistoryMarker;
  /** Files put back as they were: restored, recovered and deleted (not directories, not skips). */
  filesRestored: number;
  counts: RollbackCounts;
  /** Every path with what was done to it. */
  paths: PathAction[];
  /** Paths left alone (changed outside a turn since, say), each with its reason; force restores them. */
  skipped: PathAction[];
  /** True for a plan (dryRun): nothing was changed. */
  dryRun: boolean;
  /**
   * False if a step failed for a reason other than a conflict (`failure`
   * says what): a partial rollback leaves no marker, so keep the
   * conversation as it is; undo() or revert() again finishes it once the
   * cause is gone, redo() undoes what it did.
   */
  complete: boolean;
  failure?: string;
  /** The daemon's replies, one per rollback or unrevert made. */
  results: RollbackResult[];
}

/** history.diff()'s result. */
export interface HistoryDiff {
  /** "turn 3", "turn 3 step call_1" */
  from: string;
  /** "end of turn 3", "turn 5", "now", "end of the step" */
  to: string;
  files: DiffFile[];
  /** The unified diffs of all text files, one after another. */
  patch: string;
}

export interface HistoryOptions {
  /** The workspace (or a path inside it): found as the CLI finds it. Default: the current directory. */
  workspace?: string;
  /** The control socket, instead of finding it from workspace. */
  socket?: string;
  /** A remote daemon's TLS listener, https://HOST:PORT, instead of a socket (see ClientOptions). */
  remote?: string;
  /** With remote: the directory holding ca.pem, cert.pem and key.pem (default: $COWFS_TLS_DIR). */
  tlsDir?: string;
  /** With remote: the PEM material itself. */
  tls?: TLSMaterial;
  /** A client to use instead of any of these. */
  client?: CowfsClient;
  /** Start reporting events after this seq (default: from now on). */
  since?: number;
  /** How long endTurn() and rewinds wait for their event to reach the listeners, in ms (default 10000). */
  eventWait?: number;
}

/** What history.diff() shows. */
export interface DiffOptions {
  /**
   * Only what this step of the turn changed, from the step's start to its
   * last change: a tool call's id (when toolCall() marked it, or its model
   * step had that one call) or a model step's id (step()). A model step
   * whose tool calls were marked one by one holds only the changes made
   * before the first of them; diff each tool call instead.
   */
  step?: string;
  /** Counts only: no diff text, and `patch` is empty. */
  stat?: boolean;
}

export interface RewindOptions {
  /** Also put back paths changed outside a turn since, which are otherwise skipped. */
  force?: boolean;
  /** Only plan (undo and revert): nothing is changed, and no marker is left. */
  dryRun?: boolean;
}

export class History {
  /** The client underneath, for everything else the API offers. */
  readonly client: CowfsClient;
  private readonly feed: ChangeFeed;

  private constructor(client: CowfsClient, feed: ChangeFeed) {
    this.client = client;
    this.feed = feed;
  }

  /** Opens the history of a mounted workspace and starts following its events. */
  static async open(opts: HistoryOptions = {}): Promise<History> {
    const client =
      opts.client ??
      (opts.socket !== undefined || opts.remote !== undefined
        ? new CowfsClient({ socket: opts.socket, remote: opts.remote, tlsDir: opts.tlsDir, tls: opts.tls })
        : await CowfsClient.forWorkspace(opts.workspace));
    const [status, list, since] = await Promise.all([client.status(), client.turns(), opts.since ?? latestSeq(client)]);
    const feed = new ChangeFeed(client, since, status.pid, opts.eventWait ?? 10_000);
    for (const t of list.turns) feed.turnBegan(t.num, t.anchor);
    return new History(client, feed);
  }

  /** Why the event stream stopped, if it did (onFileChanged then reports nothing more). */
  get streamError(): Error | undefined {
    return this.feed.streamError;
  }

  /** Stops following events. */
  close(): Promise<void> {
    return this.feed.close();
  }

  /**
   * A user message arrived: begin its turn. anchor is the message's id; id
   * the harness's own turn id, if any; agent the processes that are the
   * agent (absent: the daemon's default).
   */
  async beginTurn(t: { id?: string; anchor?: string; agent?: AgentScope } = {}): Promise<Turn> {
    const turn = await this.client.beginTurn({ id: t.id, anchor: t.anchor, agent: t.agent });
    this.feed.turnBegan(turn.num, turn.anchor);
    return turn;
  }

  /**
   * A model step begins, with the tool calls it asked for: changes from
   * here on carry the step (and, if it has one tool call, that call).
   */
  async step(s: { id: string; toolCallIds?: string[] }): Promise<void> {
    await this.client.beginStep(s.id);
    this.feed.stepBegan(s.id, [...(s.toolCallIds ?? [])]);
  }

  /**
   * One tool call of the current model step starts running: changes from
   * here on carry its id exactly, also when the step has several. (Tool
   * calls must run one after another for this; TanStack AI runs them so.)
   */
  async toolCall(toolCallId: string): Promise<void> {
    await this.client.beginStep(toolCallId);
    this.feed.toolCallBegan(toolCallId);
  }

  /** The agent's answer is complete: end the turn. Resolves once its file changes reached the listeners. */
  async endTurn(): Promise<Turn> {
    const turn = await this.client.endTurn();
    await this.feed.turnEnded(turn.num);
    return turn;
  }

  /** Roll back the latest turn not rolled back already. NotFoundError if there is none. */
  async undo(opts: RewindOptions = {}): Promise<RewindResult> {
    const { turns } = await this.client.turns();
    const latest = turns.filter((t) => t.state !== "reverted").pop();
    if (latest === undefined) {
      throw new NotFoundError("not_found", "no turn to undo", 0);
    }
    return this.rollback("undo", latest.num, opts);
  }

  /** Undo the last undo (or revert). ConflictError if there is none since the last turn began. */
  async redo(opts: { force?: boolean } = {}): Promise<RewindResult> {
    return this.rewindResult("redo", [await this.unrevertOnce("redo", opts.force)]);
  }

  /**
   * Roll back to before the turn that message started (the latest turn
   * anchored at messageId). NotFoundError if no turn in the window is.
   */
  async revert(r: { messageId: string } & RewindOptions): Promise<RewindResult> {
    const { turns } = await this.client.turns();
    const turn = turns.filter((t) => t.anchor === r.messageId).pop();
    if (turn === undefined) {
      throw new NotFoundError("not_found", `no turn in the window is anchored at message ${r.messageId}`, 0);
    }
    return this.rollback("revert", turn.num, r);
  }

  /**
   * Undo every undo and revert since the last turn began: the workspace
   * is as it was before the first of them. ConflictError if there is none.
   */
  async unrevert(opts: { force?: boolean } = {}): Promise<RewindResult> {
    const results: RollbackResult[] = [];
    while ((await this.client.status()).unrevertable > 0) {
      results.push(await this.unrevertOnce("unrevert", opts.force));
    }
    if (results.length === 0) {
      throw new ConflictError("conflict", "nothing to unrevert", 0);
    }
    return this.rewindResult("unrevert", results);
  }

  /**
   * What changed from the start of `from` to its end, or to the start of
   * `to`, or to `"now"`; with `{ step }`, what one step (a tool call) of
   * `from` changed: `diff(e.messageId, { step: e.toolCallId })` for a
   * FileChangedEvent `e`. A string names a message (the turn anchored at
   * it) or, failing that, a turn id; a number is a turn number.
   */
  diff(from: TurnRef, to?: TurnRef | "now", opts?: DiffOptions): Promise<HistoryDiff>;
  diff(from: TurnRef, opts: DiffOptions): Promise<HistoryDiff>;
  async diff(from: TurnRef, toOrOpts?: TurnRef | "now" | DiffOptions, more: DiffOptions = {}): Promise<HistoryDiff> {
    const [to, opts] = typeof toOrOpts === "object" ? [undefined, toOrOpts] : [toOrOpts, more];
    if (to !== undefined && opts.step !== undefined) {
      // The daemon ends a step's diff at the step's last change.
      throw new BadRequestError("bad_request", "a step's diff ends where the step ends: leave out to", 0);
    }
    const [f, t] = await Promise.all([this.resolve(from), to === undefined ? undefined : this.resolve(to)]);
    const d = await this.client.diff({ from: f, to: t, step: opts.step, stat: opts.stat });
    return { from: d.from, to: d.to, files: d.files, patch: d.files.map((x) => x.diff ?? "").join("") };
  }

  /** Calls cb for each file change from now on; returns a function that stops it. */
  onFileChanged(cb: (e: FileChangedEvent) => void): () => void {
    return this.feed.listen(cb);
  }

  /** The markers left by rewinds, oldest turn first. */
  async markers(): Promise<HistoryMarker[]> {
    return (await this.client.markers()).markers.map(markerOf);
  }

  /**
   * Throw the workspace's history away (TanStack's purgeSnapshots): the
   * daemon stops and removes its journal, state and private directory;
   * the files stay. Events stop. BusyError while a turn is open or
   * processes use the mount.
   */
  async purgeSnapshots(): Promise<string[]> {
    const { removed } = await this.client.purge();
    await this.feed.close();
    return removed;
  }

  private async rollback(cause: "undo" | "revert", to: number, opts: RewindOptions): Promise<RewindResult> {
    const req = { to, force: opts.force, dry_run: opts.dryRun };
    const call = () => this.client.rollback(req);
    // A dry run changes nothing and leaves no event to wait for.
    const res = opts.dryRun ? await call() : await this.feed.track("rollback", cause, call);
    return this.rewindResult(cause, [res]);
  }

  private unrevertOnce(cause: "redo" | "unrevert", force?: boolean): Promise<RollbackResult> {
    return this.feed.track("unrevert", cause, () => this.client.unrevert({ force }));
  }

  private async rewindResult(action: RewindCause, results: RollbackResult[]): Promise<RewindResult> {
    const counts: RollbackCounts = { restored: 0, recovered: 0, deleted: 0, skipped: 0, dirs_removed: 0, dirs_recreated: 0 };
    for (const r of results) {
      for (const k of Object.keys(counts) as (keyof RollbackCounts)[]) counts[k] += r.counts[k];
    }
    // Unreverts go back newest first: the last one names the earliest point.
    const last = results[results.length - 1]!;
    const paths = results.flatMap((r) => r.paths);
    let turnId = last.marker?.id;
    let messageId = last.marker?.anchor;
    if (last.marker === undefined) {
      const t = (await this.client.turns()).turns.find((x) => x.num === last.target);
      turnId = t?.id;
      messageId = t?.anchor ?? this.feed.anchorOf(last.target);
    }
    return {
      action,
      turn: last.target,
      turnId,
      messageId,
      marker: last.marker === undefined ? undefined : markerOf(last.marker),
      filesRestored: counts.restored + counts.recovered + counts.deleted,
      counts,
      paths,
      skipped: paths.filter((p) => p.action === "skip"),
      dryRun: last.dry_run === true,
      complete: results.every((r) => r.complete !== false),
      failure: results.find((r) => r.failure !== undefined)?.failure,
      results,
    };
  }

  /** A diff endpoint's turn: a message id's turn, else the string itself (a turn id), or the number. */
  private async resolve(ref: TurnRef | "now"): Promise<TurnRef | "now"> {
    if (typeof ref === "number" || ref === "now") return ref;
    const t = (await this.client.turns()).turns.filter((x) => x.anchor === ref).pop();
    return t?.num ?? ref;
  }
}

/** The seq of the latest event, read from the stream without following it. */
async function latestSeq(client: CowfsClient): Promise<number> {
  const stream = client.events({ follow: false });
  for await (const _ of stream) {
    // Read to the end.
  }
  return stream.lastSeq;
}

function markerOf(m: Marker): HistoryMarker {
  return { turn: m.turn, turnId: m.id, messageId: m.anchor, note: m.note, createdAt: m.created_at };
}
