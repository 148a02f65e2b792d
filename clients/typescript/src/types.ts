// The wire types of the control socket, version 1, as docs/api.md
// documents them and ctl/api.go defines them: field names are the JSON
// names, so a reply reads the same here, in curl and in the Go client.
// Times are RFC 3339 strings. Paths are relative to the workspace root;
// a byte of a name that is not valid UTF-8 arrives as a lone surrogate
// \udc80–\udcff (paths.ts turns such a string into bytes).
//
// test/wire-schema.ts mirrors the reply types (tsc keeps it in step), and
// test/contract.test.ts checks real replies against it: a field ctl/api.go
// gains fails there until it is declared here.

/** The body of `POST /v1/turns`. Every field is optional. */
export interface BeginTurnRequest {
  /** The harness's own id for the turn, unique in the window; not a number (numbers name turns by position). At most 256 bytes. */
  id?: string;
  /** Ties the turn to the conversation, e.g. the user message's id; a rollback's marker returns it. At most 1024 bytes. */
  anchor?: string;
  /**
   * The processes that are the turn's agent. Absent or empty: the daemon's
   * default (`cowfs mount --agent-*`; under `cowfs run`, its command), and
   * without one every process.
   */
  agent?: AgentScope;
}

/**
 * The processes that are a turn's agent: a process is the agent's if any
 * entry holds it. A change another process makes during the turn (a
 * person's editor, a second tool) is journaled but not the turn's: it
 * carries `agent: false`, and rollbacks never undo it (unless forced) and
 * skip the turn's changes to the same paths as conflicts.
 */
export interface AgentScope {
  /** Processes whose filesystem uid is one of these. */
  uids?: number[];
  /** These processes and their descendants, followed across fork, exec and re-parenting; each must be running when the turn begins. */
  pids?: number[];
  /** Processes in these cgroup v2 cgroups or beneath them (`/system.slice/agent.scope`, or the same under the cgroup2 mount); each must exist. */
  cgroups?: string[];
}

/** A turn's state: `reverted` turns were rolled back and are dropped when the next turn begins. */
export type TurnState = "open" | "closed" | "reverted";

/** One turn. */
export interface Turn {
  /** 1, 2, 3 … never reused. */
  num: number;
  /** The harness's id. */
  id?: string;
  /** The conversation anchor. */
  anchor?: string;
  state: TurnState;
  began_at: string;
  ended_at?: string;
  /** Paths with a net change by the turn's agent. */
  changed_paths: number;
  /** Journal records. */
  records: number;
  /** Bytes the turn added to the journal. */
  journal_bytes: number;
  /** Paths processes outside the turn's agent scope changed during it: not the turn's changes. */
  not_agent_paths?: number;
  /** The turn's agent scope; absent if every process is its agent. */
  agent?: AgentScope;
}

/** The body of `GET /v1/turns`. */
export interface TurnList {
  /** Oldest first. */
  turns: Turn[];
  /** Paths changed through the mount while no turn was open, in the window. */
  outside_turns: number;
  /** As in Status: turns left the window early since the oldest turn in it began. */
  pruned_early?: PrunedEarly;
}

/**
 * Why a turn left the window: `window` (newer turns filled it),
 * `max_journal_size` (the journal reached `--max-journal-size`) or
 * `disk_full` (the journal's filesystem was full).
 */
export type PruneReason = "window" | "max_journal_size" | "disk_full";

/** When turns last left the window before their time. */
export interface PrunedEarly {
  /** The newest turn that left. */
  through: number;
  /** `max_journal_size` or `disk_full`. */
  reason: PruneReason;
  time: string;
}

/** What the daemon process holds, to watch for leaks and bound memory. */
export interface Resources {
  goroutines: number;
  /** Open descriptors. */
  open_files: number;
  rss_bytes: number;
  /** The peak since the daemon started. */
  max_rss_bytes: number;
}

/** What a turn did to a path, net: in a turn's changes. */
export type ChangeKind = "created" | "modified" | "deleted" | "renamed" | "metadata";

/**
 * What happened to a path in a change event: through the mount `created`,
 * `modified`, `deleted`, `moved` (one event for a mv, with `from`) or
 * `metadata`; by a rollback or an unrevert (the event has `rollback` and no
 * process) `restored`, `recovered`, `deleted` or `moved` (back).
 */
export type EventKind = "created" | "modified" | "deleted" | "moved" | "metadata" | "restored" | "recovered";

/** What a path is. */
export type FileType = "file" | "dir" | "symlink" | "fifo" | "socket" | "char" | "block";

/** The net effect of a turn on one path. */
export interface Change {
  /** Relative to the workspace root. */
  path: string;
  kind: ChangeKind;
  /** For `renamed`: where it was. */
  from?: string;
  type: FileType;
  /** The pre-image kept for the path: what a rollback would put back. */
  bytes: number;
  /** The process that made the first change (pid 0: a kernel flush no process maps any more). */
  pid: number;
  uid: number;
  /** `/proc/PID/comm` of that process. */
  command: string;
  /**
   * Its command line (`/proc/PID/cmdline`): arguments joined by spaces,
   * non-printable characters and bytes that are not UTF-8 escaped as
   * `\xNN`, at most 256 bytes, ending in "…" if cut. Absent if it could
   * not be read, or journaled before cowfs kept command lines.
   */
  command_line?: string;
  time: string;
  /** The step (tool call) the first change was made in. */
  step?: string;
  /**
   * Made (at least partly) outside the mount — by the host side of a
   * sandbox, another mount namespace, or while cowfs was not running —
   * and found at a turn boundary, a rollback or start-up. What it
   * destroyed is unknown: a rollback leaves the path alone and reports
   * it, unless forced.
   */
  outside?: boolean;
  /**
   * `false` for a change made by processes outside the turn's agent scope
   * (`pid`, `uid` and `command` are theirs): not the turn's; a rollback
   * leaves it and skips the turn's changes to the path, unless forced. A
   * turn lists it apart from the agent's change to the same path. Absent:
   * the agent's.
   */
  agent?: false;
}

/** The body of `GET /v1/turns/{ref}`. */
export interface TurnDetail extends Turn {
  /** Sorted by path. */
  changes: Change[];
}

/** One step (tool call) of a turn and what it changed. */
export interface Step {
  /** The step's id; "" for the changes made before the turn's first step. */
  id: string;
  /** What the step is (the tool's name), if the harness said. */
  name?: string;
  /** When it began (absent for id ""). */
  began_at?: string;
  changed_paths: number;
  not_agent_paths?: number;
  /** The step's own net changes, by path: a path two steps changed is under each. */
  changes: Change[];
}

/** The body of `GET /v1/turns/{ref}/steps`. */
export interface StepList {
  turn: number;
  /** In the order they began. */
  steps: Step[];
}

/** The body of `GET /v1/outside`: the changes made while no turn was open. */
export interface OutsideChanges {
  /** Sorted by path. */
  changes: Change[];
}

/** The body of `GET /v1/status`. */
export interface Status {
  version: string;
  /** The backing directory. */
  workspace: string;
  /** Where the view is mounted. */
  mountpoint: string;
  /** The journal directory. */
  journal: string;
  socket: string;
  /** The https://HOST:PORT the API is also served at over mutual TLS (`--listen`), its port resolved; absent without one. */
  listen?: string;
  /** The daemon's pid. */
  pid: number;
  started_at: string;
  /** Turns kept. */
  window: number;
  /** Whether commits are fsynced. */
  sync: boolean;
  open_turn?: Turn;
  /** Turns in the window. */
  turns: number;
  /** With `latest_turn`, the range a rollback can reach. */
  oldest_turn?: number;
  latest_turn?: number;
  /** On disk. */
  journal_bytes: number;
  /** The compressed content the window needs. */
  content_bytes: number;
  /** Free on the journal's filesystem. */
  free_bytes: number;
  /** The size bound (`--max-journal-size`); 0: none. */
  max_journal_bytes: number;
  /** Set if turns left the window early since the oldest turn in it began. */
  pruned_early?: PrunedEarly;
  /** Why the journal became unusable; changes that need a record fail until the daemon restarts. */
  journal_error?: string;
  /** Rollbacks since the last turn began; the latest can be unreverted. */
  unrevertable: number;
  /** The daemon's own resources. */
  resources: Resources;
  /**
   * Why the latest rescan (start-up, a turn or step boundary) stat'ed every
   * tracked path rather than only what the kernel reported changed
   * ("nothing was watching", "not watching", "the kernel's event queue
   * overflowed", …); absent when it did not.
   */
  full_scan?: string;
  /**
   * FUSE requests the mount has served since it started, by operation
   * (`LOOKUP`, `WRITE`, …); operations never served are left out. For
   * measuring round trips.
   */
  fuse_requests?: Record<string, number>;
}

/** A turn, by number or by the harness's id. */
export type TurnRef = number | string;

/** The body of `POST /v1/rollback`. */
export interface RollbackRequest {
  /** The turn to roll back to before: the workspace returns to its state when that turn began. */
  to: TurnRef;
  /** Return the plan and change nothing. */
  dry_run?: boolean;
  /** Also restore paths changed outside turns since, which are otherwise skipped. */
  force?: boolean;
}

/** The body of `POST /v1/unrevert`. */
export interface UnrevertRequest {
  /** Also undo the rollback on paths changed since it. */
  force?: boolean;
}

/**
 * What a rollback does to a path: `restore` (exists before and after),
 * `recover` (deleted or renamed away; brought back), `delete` (did not
 * exist when the turn began) or `skip` (left as it is; `reason` says why).
 */
export type RollbackAction = "restore" | "recover" | "delete" | "skip";

/** What a rollback does (or, dry, would do) to one path. */
export interface PathAction {
  path: string;
  action: RollbackAction;
  type: FileType;
  reason?: string;
  /** A rename undone: the object recovered at `path` comes from `from`. */
  from?: string;
  /** A rename undone: the object deleted from `path` moves to `to`. */
  to?: string;
  /**
   * What else happened to a path the rollback restored: a process wrote to
   * it through a shared mapping during the rollback, and the kernel's
   * writeback of that page, which also held bytes from before the restore,
   * was refused (the writer got EIO).
   */
  note?: string;
  /**
   * An earlier rollback skipped changes to this path (a conflict, a
   * failure) and this one, the cause gone, undid them.
   */
  retried?: boolean;
}

/** A rollback's paths summed: files (and other non-directories) by action, directories removed and recreated. */
export interface RollbackCounts {
  restored: number;
  recovered: number;
  deleted: number;
  skipped: number;
  dirs_removed: number;
  dirs_recreated: number;
}

/** Where the harness truncates its conversation after a rollback: at `anchor`. */
export interface Marker {
  /** The turn rolled back to before. */
  turn: number;
  id?: string;
  anchor?: string;
  created_at: string;
  /** At most 160 characters for the model: later messages were removed and the files restored. */
  note: string;
  /**
   * The markers this one superseded, oldest turn first: those that stood at
   * or after its turn when its rollback was made. The conversation from its
   * anchor on is cut, their notes with it; an unrevert puts them back. Their
   * own `replaces` are left out.
   */
  replaces?: Marker[];
}

/** The reply to a rollback or an unrevert. */
export interface RollbackResult {
  /** The turn rolled back to before (for an unrevert: the turn the undone rollback went back to). */
  target: number;
  dry_run?: boolean;
  unrevert?: boolean;
  /** The rollback's id (absent in a dry run). */
  rollback?: number;
  /** Sorted by path. */
  paths: PathAction[];
  counts: RollbackCounts;
  /** Absent in a dry run, an unrevert (which withdraws it) and a partial rollback. */
  marker?: Marker;
  /**
   * False for a partial rollback: a step failed for a reason other than a
   * conflict (`failure` says what); it left no marker and reverted no turn,
   * so the conversation must not be truncated. The same rollback again
   * finishes it once the cause is gone; an unrevert undoes what it did.
   */
  complete: boolean;
  failure?: string;
}

/** The body of `GET /v1/markers`. */
export interface MarkerList {
  /** Oldest turn first. */
  markers: Marker[];
}

/** The body of `POST /v1/turns/current/steps`. */
export interface StepRequest {
  /** The harness's tool-call (or model-step) id, 1 to 256 bytes. */
  id: string;
  /** What the step is, e.g. the tool's name (at most 256 bytes). */
  name?: string;
}

/** The reply to a step. */
export interface StepStarted {
  turn: number;
  id: string;
  name?: string;
}

/** Event types on `GET /v1/events`. */
export type EventType =
  | "change"
  | "turn_begin"
  | "turn_end"
  | "step"
  | "rollback"
  | "unrevert"
  | "turn_pruned"
  | "gap"
  | "journal_error";

/** One line of `GET /v1/events`. Which fields are set depends on `type`. */
export interface Event {
  /** Orders events; resume with `?since=`. */
  seq: number;
  time: string;
  type: EventType;
  /** The turn the event happened in (absent: outside a turn). */
  turn?: number;
  step?: string;

  // change: one event per journaled change, not netted.
  path?: string;
  kind?: EventKind;
  from?: string;
  bytes?: number;
  pid?: number;
  uid?: number;
  command?: string;
  /** As in `Change`. */
  command_line?: string;
  /** A change found outside the mount (no process). */
  outside?: boolean;
  /** `false`: made during a turn by a process outside its agent scope (see `Change.agent`). */
  agent?: false;

  // turn_begin; turn_pruned (id).
  id?: string;
  anchor?: string;

  /** step: its name, if it was given one. */
  name?: string;

  // rollback, unrevert; and a change a rollback or an unrevert made.
  rollback?: number;
  target?: number;
  counts?: RollbackCounts;
  marker?: Marker;
  /** A partial rollback: what failed. */
  failure?: string;

  // turn_pruned: why the turn left the window.
  reason?: PruneReason;

  // journal_error.
  message?: string;
}

/** The query of `GET /v1/diff`. */
export interface DiffRequest {
  /** The turn whose start the diff starts at. */
  from: TurnRef;
  /** Where it ends: absent for the end of `from`, a later turn (its start), or `"now"`. */
  to?: TurnRef | "now";
  /** Only what this step of `from` changed. */
  step?: string;
  /** Counts only, no diff text. */
  stat?: boolean;
}

/** One changed file in a diff. */
export interface DiffFile {
  path: string;
  /** Renamed: the old path. */
  from?: string;
  status: "created" | "modified" | "deleted" | "renamed" | "metadata";
  /** Named, not diffed. */
  binary?: boolean;
  /** Over 1 MiB: named, not diffed. */
  too_large?: boolean;
  /** Lines. */
  added: number;
  removed: number;
  /** The unified diff (absent with `stat`, or for binary, too large, metadata-only and non-regular files). */
  diff?: string;
  /** Why there is no diff of a changed path (a symlink's target, a directory). */
  note?: string;
  /** `false`: (some of) the change was made during a turn by a process outside its agent scope (see `Change.agent`). */
  agent?: false;
}

/** The body of `GET /v1/diff`. */
export interface Diff {
  /** "turn 3", "turn 3 step call_1". */
  from: string;
  /** "end of turn 3", "turn 5", "now". */
  to: string;
  files: DiffFile[];
}

/** The body of `DELETE /v1/journal`: what the daemon removed before it exited, in order. */
export interface Purged {
  removed: string[];
}

/** The API's error codes. */
export type ErrorCode =
  | "bad_request"
  | "forbidden"
  | "not_found"
  | "busy"
  | "conflict"
  | "out_of_window"
  | "internal";

/** The body of every error reply, as `{"error": ErrorBody}`. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  /** `out_of_window`: the oldest turn a rollback can reach. */
  oldest?: number;
  /** `out_of_window`: the latest turn a rollback can reach. */
  latest?: number;
}
