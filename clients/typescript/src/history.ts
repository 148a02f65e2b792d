// History: the words TypeScript harness authors know from TanStack AI's
// git-shadow `snapshots()` plugin — beginTurn, step, endTurn, undo, redo,
// revert, unrevert, diff, onFileChanged, markers — on top of a cowfs
// daemon. A turn is one user message and the agent's answer; its anchor is
// that message's id, so every rewind says where the harness truncates (or,
// redoing, restores) its conversation.
//
// # Where file-change events come from
//
// One event stream (GET /v1/events?follow=1) runs from open() to close().
// Every change made through the mount, by any process, arrives there
// before it reaches the workspace, tagged with the cowfs step it happened
// in; History maps steps back to the model step and tool call the
// harness marked. Changes a rollback makes are not in the stream (they are
// the daemon's own); History turns the reply of each rewind it makes into
// FileChanged events, emitted when the stream reaches that rollback's own
// event, so listeners see every change in the order it happened.
//
// # Waiting
//
// endTurn() and the rewinds resolve once the stream has delivered their
// turn_end (or rollback) event: every FileChanged of the turn, or of the
// rewind, has reached the listeners by then. If the event does not come
// within eventWait ms (the stream is down), they resolve anyway.

import { CowfsClient } from "./client.js";
import { ConflictError, NotFoundError } from "./errors.js";
import type { ChangeKind, DiffFile, Event, Marker, PathAction, RollbackCounts, RollbackResult, Turn, TurnRef } from "./types.js";

/** What happened to a path, in the snapshots() vocabulary. */
export type FileChange = "created" | "updated" | "deleted" | "moved";

/** Which rewind made a change (absent: a process working through the mount). */
export type RewindCause = "undo" | "redo" | "revert" | "unrevert";

/** One change to a workspace file, as onFileChanged reports it. */
export interface FileChangedEvent {
  change: FileChange;
  /** Relative to the workspace root; for `moved`, the new path. */
  path: string;
  /** For `moved`: the old path. */
  from?: string;
  /** The tool call that made it, when the harness marked it (toolCall()) or its model step had one tool call. */
  toolCallId?: string;
  /** The model step it happened in (step()'s id). */
  stepId?: string;
  /** The turn it happened in; absent outside a turn. */
  turn?: number;
  /** The anchor (user message id) of that turn. */
  messageId?: string;
  /** The process that made it; for a rewind, the daemon. 0: a kernel flush of a mapping no process holds any more. */
  pid: number;
  /** Its command name (`/proc/PID/comm`); `cowfs` for a rewind. */
  command: string;
  /** cowfs's own word: created, modified, deleted, renamed or metadata (mode, owner, times, xattrs). */
  kind?: ChangeKind;
  /** The event's seq in the daemon's stream (absent for a rewind's changes). */
  seq?: number;
  /** Set when a rewind made the change. */
  cause?: RewindCause;
}

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
   * That turn's anchor. After undo and revert, truncate the conversation
   * at this message (it and everything after it go); after redo and
   * unrevert, put back what was truncated here.
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
  /** The daemon's replies, one per rollback or unrevert made. */
  results: RollbackResult[];
}

/** history.diff()'s result. */
export interface HistoryDiff {
  /** "turn 3" */
  from: string;
  /** "end of turn 3", "turn 5", "now" */
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
  /** A client to use instead of either. */
  client?: CowfsClient;
  /** Start reporting events after this seq (default: from now on). */
  since?: number;
  /** How long endTurn() and rewinds wait for their event to reach the listeners, in ms (default 10000). */
  eventWait?: number;
}

export interface RewindOptions {
  /** Also put back paths changed outside a turn since, which are otherwise skipped. */
  force?: boolean;
  /** Only plan (undo and revert): nothing is changed, and no marker is left. */
  dryRun?: boolean;
}

type Listener = (e: FileChangedEvent) => void;

/** A rewind in flight, waiting for its event in the stream. */
interface Pending {
  type: "rollback" | "unrevert";
  cause: RewindCause;
  reply: Promise<RollbackResult | undefined>;
  delivered: () => void;
}

export class History {
  /** The client underneath, for everything else the API offers. */
  readonly client: CowfsClient;

  private readonly listeners = new Set<Listener>();
  private readonly abort = new AbortController();
  private readonly eventWait: number;
  private daemonPid = 0;
  private streamDone: Promise<void> = Promise.resolve();
  /** Why the event stream stopped, if it did (onFileChanged then reports nothing more). */
  streamError: Error | undefined;

  /** Anchors of the turns seen, by number. */
  private readonly anchors = new Map<number, string | undefined>();
  /** Model steps marked: step id → its tool-call ids. */
  private readonly modelSteps = new Map<string, string[]>();
  /** Tool calls marked with toolCall(): tool-call id → its model step id. */
  private readonly toolCalls = new Map<string, string | undefined>();
  private currentStep: string | undefined;
  /** The latest turn whose turn_end the stream has delivered. */
  private lastEnded = 0;

  private readonly pendings: Pending[] = [];
  private readonly waiters = new Set<{ match: (e: Event) => boolean; done: () => void }>();

  private constructor(client: CowfsClient, eventWait: number) {
    this.client = client;
    this.eventWait = eventWait;
  }

  /** Opens the history of a mounted workspace and starts following its events. */
  static async open(opts: HistoryOptions = {}): Promise<History> {
    const client = opts.client ?? (opts.socket !== undefined ? new CowfsClient(opts.socket) : await CowfsClient.forWorkspace(opts.workspace));
    const h = new History(client, opts.eventWait ?? 10_000);
    const [status, list] = await Promise.all([client.status(), client.turns()]);
    h.daemonPid = status.pid;
    for (const t of list.turns) h.anchors.set(t.num, t.anchor);
    h.start(opts.since ?? (await latestSeq(client)));
    return h;
  }

  /** Stops following events. */
  async close(): Promise<void> {
    this.abort.abort();
    await this.streamDone;
  }

  /** A user message arrived: begin its turn. anchor is the message's id; id the harness's own turn id, if any. */
  async beginTurn(t: { id?: string; anchor?: string } = {}): Promise<Turn> {
    const turn = await this.client.beginTurn({ id: t.id, anchor: t.anchor });
    this.anchors.set(turn.num, turn.anchor);
    this.modelSteps.clear();
    this.toolCalls.clear();
    this.currentStep = undefined;
    return turn;
  }

  /**
   * A model step begins, with the tool calls it asked for: changes from
   * here on carry the step (and, if it has one tool call, that call).
   */
  async step(s: { id: string; toolCallIds?: string[] }): Promise<void> {
    await this.client.beginStep(s.id);
    this.modelSteps.set(s.id, [...(s.toolCallIds ?? [])]);
    this.currentStep = s.id;
  }

  /**
   * One tool call of the current model step starts running: changes from
   * here on carry its id exactly, also when the step has several. (Tool
   * calls must run one after another for this; TanStack AI runs them so.)
   */
  async toolCall(toolCallId: string): Promise<void> {
    await this.client.beginStep(toolCallId);
    this.toolCalls.set(toolCallId, this.currentStep);
  }

  /** The agent's answer is complete: end the turn. Resolves once its file changes reached the listeners. */
  async endTurn(): Promise<Turn> {
    const turn = await this.client.endTurn();
    // The event is journaled before the reply: the stream may be past it.
    if (this.lastEnded < turn.num) {
      await this.waitFor((e) => e.type === "turn_end" && e.turn === turn.num);
    }
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
    const res = await this.unrevertOnce("redo", opts.force);
    return this.rewindResult("redo", [res]);
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
    for (;;) {
      const { unrevertable } = await this.client.status();
      if (unrevertable === 0) break;
      results.push(await this.unrevertOnce("unrevert", opts.force));
    }
    if (results.length === 0) {
      throw new ConflictError("conflict", "nothing to unrevert", 0);
    }
    return this.rewindResult("unrevert", results);
  }

  /**
   * What changed from the start of `from` to its end, or to the start of
   * `to`, or to `"now"`. A string names a message (the turn anchored at
   * it) or, failing that, a turn id; a number is a turn number.
   */
  async diff(from: TurnRef, to?: TurnRef | "now"): Promise<HistoryDiff> {
    const [f, t] = await Promise.all([this.resolve(from), to === undefined ? undefined : this.resolve(to)]);
    const d = await this.client.diff({ from: f, to: t });
    return { from: d.from, to: d.to, files: d.files, patch: d.files.map((x) => x.diff ?? "").join("") };
  }

  /** Calls cb for each file change from now on; returns a function that stops it. */
  onFileChanged(cb: Listener): () => void {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  /** The markers left by rewinds, oldest turn first. */
  async markers(): Promise<HistoryMarker[]> {
    return (await this.client.markers()).markers.map(markerOf);
  }

  private async rollback(cause: "undo" | "revert", to: number, opts: RewindOptions): Promise<RewindResult> {
    const req = { to, force: opts.force, dry_run: opts.dryRun };
    if (opts.dryRun) {
      return this.rewindResult(cause, [await this.client.rollback(req)]);
    }
    const res = await this.tracked("rollback", cause, () => this.client.rollback(req));
    return this.rewindResult(cause, [res]);
  }

  private unrevertOnce(cause: "redo" | "unrevert", force?: boolean): Promise<RollbackResult> {
    return this.tracked("unrevert", cause, () => this.client.unrevert({ force }));
  }

  /**
   * Makes a rollback or unrevert, and waits until the stream has reached
   * its event and the listeners have its changes.
   */
  private async tracked(type: Pending["type"], cause: RewindCause, call: () => Promise<RollbackResult>): Promise<RollbackResult> {
    let delivered!: () => void;
    const seen = new Promise<void>((resolve) => (delivered = resolve));
    const reply = call();
    const p: Pending = { type, cause, reply: reply.catch(() => undefined), delivered };
    this.pendings.push(p);
    try {
      const res = await reply;
      await this.timed(seen);
      return res;
    } finally {
      this.pendings.splice(this.pendings.indexOf(p), 1);
    }
  }

  private async rewindResult(action: RewindCause, results: RollbackResult[]): Promise<RewindResult> {
    const counts: RollbackCounts = { restored: 0, recovered: 0, deleted: 0, skipped: 0, dirs_removed: 0, dirs_recreated: 0 };
    for (const r of results) {
      for (const k of Object.keys(counts) as (keyof RollbackCounts)[]) counts[k] += r.counts[k];
    }
    // Unreverts go back newest first: the last one names the earliest point.
    const last = results[results.length - 1]!;
    const paths = results.flatMap((r) => r.paths);
    let turnId: string | undefined;
    let messageId: string | undefined;
    if (last.marker !== undefined) {
      turnId = last.marker.id;
      messageId = last.marker.anchor;
    } else {
      const t = (await this.client.turns()).turns.find((x) => x.num === last.target);
      turnId = t?.id;
      messageId = t?.anchor ?? this.anchors.get(last.target);
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
      results,
    };
  }

  /** A diff endpoint's turn: a message id's turn, else the string itself (a turn id), or the number. */
  private async resolve(ref: TurnRef | "now"): Promise<TurnRef | "now"> {
    if (typeof ref === "number" || ref === "now") return ref;
    const t = (await this.client.turns()).turns.filter((x) => x.anchor === ref).pop();
    return t?.num ?? ref;
  }

  private start(since: number): void {
    const stream = this.client.events({ since, signal: this.abort.signal });
    this.streamDone = (async () => {
      for await (const e of stream) {
        await this.handle(e);
      }
    })().catch((err: Error) => {
      // Connection losses are retried by the stream itself; this is
      // something else (a reply that is not an event): say so, loudly,
      // without taking the harness down.
      if (!this.abort.signal.aborted) {
        this.streamError = err;
        process.emitWarning(`cowfs history: the event stream stopped: ${err.message}`);
      }
    });
  }

  private async handle(e: Event): Promise<void> {
    switch (e.type) {
      case "turn_begin":
        if (e.turn !== undefined) this.anchors.set(e.turn, e.anchor);
        break;
      case "turn_end":
        this.lastEnded = Math.max(this.lastEnded, e.turn ?? 0);
        break;
      case "change":
        this.emit(this.changeOf(e));
        break;
      case "rollback":
      case "unrevert": {
        // A rewind this history made: its reply says what it changed.
        const p = this.pendings.find((x) => x.type === e.type);
        const res = p === undefined ? undefined : await p.reply;
        if (p !== undefined && res !== undefined && res.rollback === e.rollback) {
          for (const c of rewindChanges(res, p.cause, this.daemonPid)) this.emit(c);
          p.delivered();
        }
        break;
      }
    }
    for (const w of this.waiters) {
      if (w.match(e)) {
        this.waiters.delete(w);
        w.done();
      }
    }
  }

  private changeOf(e: Event): FileChangedEvent {
    let toolCallId: string | undefined;
    let stepId: string | undefined;
    const s = e.step;
    if (s !== undefined) {
      if (this.toolCalls.has(s)) {
        toolCallId = s;
        stepId = this.toolCalls.get(s);
      } else {
        stepId = s;
        const ids = this.modelSteps.get(s);
        if (ids?.length === 1) toolCallId = ids[0];
      }
    }
    return {
      change: fileChangeOf(e.kind),
      path: e.path ?? "",
      from: e.from,
      toolCallId,
      stepId,
      turn: e.turn,
      messageId: e.turn === undefined ? undefined : this.anchors.get(e.turn),
      pid: e.pid ?? 0,
      command: e.command ?? "",
      kind: e.kind,
      seq: e.seq,
    };
  }

  private emit(e: FileChangedEvent): void {
    for (const l of this.listeners) {
      try {
        l(e);
      } catch (err) {
        // A listener's bug is the harness's to see, not the stream's to die of.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }

  /** Resolves when an event matching match has been handled, or after eventWait. */
  private waitFor(match: (e: Event) => boolean): Promise<void> {
    return this.timed(new Promise<void>((done) => this.waiters.add({ match, done })));
  }

  private async timed(p: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.eventWait)));
    try {
      await Promise.race([p, timeout]);
    } finally {
      clearTimeout(timer);
    }
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

function fileChangeOf(kind: ChangeKind | undefined): FileChange {
  switch (kind) {
    case "created":
      return "created";
    case "deleted":
      return "deleted";
    case "renamed":
      return "moved";
    default:
      return "updated";
  }
}

/** The changes a rollback or unrevert made, from its reply. */
function rewindChanges(res: RollbackResult, cause: RewindCause, pid: number): FileChangedEvent[] {
  const out: FileChangedEvent[] = [];
  for (const p of res.paths) {
    const base = { path: p.path, pid, command: "cowfs", cause };
    switch (p.action) {
      case "restore":
        out.push({ ...base, change: "updated" });
        break;
      case "recover":
        out.push(p.from === undefined ? { ...base, change: "created" } : { ...base, change: "moved", from: p.from });
        break;
      case "delete":
        // A rename undone is reported once, as the move back (its recover).
        if (p.to === undefined) out.push({ ...base, change: "deleted" });
        break;
    }
  }
  return out;
}

function markerOf(m: Marker): HistoryMarker {
  return { turn: m.turn, turnId: m.id, messageId: m.anchor, note: m.note, createdAt: m.created_at };
}
