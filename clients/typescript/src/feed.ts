// The file-change feed behind History.onFileChanged.
//
// One event stream (GET /v1/events?follow=1) runs from History.open() to
// close(). Every change made through the mount, by any process, arrives
// there before it reaches the workspace, tagged with the cowfs step it
// happened in; the feed maps steps back to the model step and tool call
// the harness marked. A rollback or an unrevert puts one change event per
// path it touched in the stream (with its rollback id, no process), then
// its own event: the feed holds those changes until that event, to tell
// which rewind History made them with (undo, redo, revert, unrevert; a
// rewind made elsewhere is a revert or an unrevert), and emits them then,
// so listeners see every change in the order it happened.
//
// Waiting: endTurn() and the rewinds resolve once the stream has handled
// their turn_end (or rollback) event, so every FileChanged of the turn, or
// of the rewind, has reached the listeners by then. If the event does not
// come within eventWait ms (the stream is down), they resolve anyway.

import type { CowfsClient } from "./client.js";
import type { Event, EventKind, RollbackResult } from "./types.js";

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
  /** cowfs's own word: created, modified, deleted, moved or metadata (mode, owner, times, xattrs); for a rewind restored, recovered, deleted or moved. */
  kind?: EventKind;
  /** The event's seq in the daemon's stream. */
  seq?: number;
  /** Set when a rewind made the change. */
  cause?: RewindCause;
}

export type Listener = (e: FileChangedEvent) => void;

/** A rewind in flight, waiting for its event in the stream. */
interface Pending {
  type: "rollback" | "unrevert";
  cause: RewindCause;
  reply: Promise<RollbackResult | undefined>;
  delivered: () => void;
}

export class ChangeFeed {
  /** Why the event stream stopped, if it did (listeners then hear nothing more). */
  streamError: Error | undefined;

  private readonly listeners = new Set<Listener>();
  private readonly abort = new AbortController();
  private readonly done: Promise<void>;

  /** Anchors of the turns seen, by number. */
  private readonly anchors = new Map<number, string | undefined>();
  /** Model steps marked: step id → its tool-call ids. */
  private readonly modelSteps = new Map<string, string[]>();
  /** Tool calls marked: tool-call id → its model step id. */
  private readonly toolCalls = new Map<string, string | undefined>();
  private currentStep: string | undefined;
  /** The latest turn whose turn_end the stream has handled. */
  private lastEnded = 0;

  private readonly pendings: Pending[] = [];
  /** A rewind's changes, held until its own event says which rewind it was. */
  private rewound: Event[] = [];
  private readonly waiters = new Set<{ match: (e: Event) => boolean; done: () => void }>();

  /** Follows client's events after since; rewinds are reported with daemonPid. */
  constructor(
    client: CowfsClient,
    since: number,
    private readonly daemonPid: number,
    private readonly eventWait: number,
  ) {
    const stream = client.events({ since, signal: this.abort.signal });
    this.done = (async () => {
      for await (const e of stream) await this.handle(e);
    })().catch((err: Error) => {
      // Lost connections are retried by the stream itself; this is
      // something else (a reply that is not an event): say so, loudly,
      // without taking the harness down.
      if (!this.abort.signal.aborted) {
        this.streamError = err;
        process.emitWarning(`cowfs history: the event stream stopped: ${err.message}`);
      }
    });
  }

  async close(): Promise<void> {
    this.abort.abort();
    await this.done;
  }

  listen(cb: Listener): () => void {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  /** A turn began: its anchor, and no steps yet. */
  turnBegan(num: number, anchor: string | undefined): void {
    this.anchors.set(num, anchor);
    this.modelSteps.clear();
    this.toolCalls.clear();
    this.currentStep = undefined;
  }

  anchorOf(num: number): string | undefined {
    return this.anchors.get(num);
  }

  stepBegan(id: string, toolCallIds: string[]): void {
    this.modelSteps.set(id, toolCallIds);
    this.currentStep = id;
  }

  toolCallBegan(toolCallId: string): void {
    this.toolCalls.set(toolCallId, this.currentStep);
  }

  /** Resolves once the stream has handled turn num's end (it may have already). */
  async turnEnded(num: number): Promise<void> {
    if (this.lastEnded < num) {
      await this.waitFor((e) => e.type === "turn_end" && e.turn === num);
    }
  }

  /**
   * Makes a rollback or unrevert with call, and resolves with its reply
   * once the stream has reached its event and the listeners have its
   * changes.
   */
  async track(type: Pending["type"], cause: RewindCause, call: () => Promise<RollbackResult>): Promise<RollbackResult> {
    let delivered!: () => void;
    const seen = new Promise<void>((resolve) => (delivered = resolve));
    // Registered before the call: its event may come before its reply.
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

  private async handle(e: Event): Promise<void> {
    switch (e.type) {
      case "turn_begin":
        if (e.turn !== undefined) this.anchors.set(e.turn, e.anchor);
        break;
      case "turn_end":
        this.lastEnded = Math.max(this.lastEnded, e.turn ?? 0);
        break;
      case "change":
        if (e.rollback !== undefined) this.rewound.push(e);
        else this.emit(this.changeOf(e));
        break;
      case "rollback":
      case "unrevert": {
        // Its changes came just before. If History made it, its reply
        // names the rewind; the stream waits for the reply, so what
        // follows comes after.
        const p = this.pendings.find((x) => x.type === e.type);
        const res = p === undefined ? undefined : await p.reply;
        const mine = p !== undefined && res !== undefined && res.rollback === e.rollback;
        const cause: RewindCause = mine ? p.cause : e.type === "rollback" ? "revert" : "unrevert";
        for (const c of this.rewound.splice(0)) {
          this.emit({
            change: fileChangeOf(c.kind),
            path: c.path ?? "",
            from: c.from,
            pid: this.daemonPid,
            command: "cowfs",
            kind: c.kind,
            seq: c.seq,
            cause,
          });
        }
        if (mine) p.delivered();
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

function fileChangeOf(kind: EventKind | undefined): FileChange {
  switch (kind) {
    case "created":
    case "recovered":
      return "created";
    case "deleted":
      return "deleted";
    case "moved":
      return "moved";
    default:
      return "updated"; // modified, metadata, restored
  }
}
