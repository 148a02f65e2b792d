// The reply types of src/types.ts as data, for the contract test: which
// keys each object has, which are optional, and what each value is. The
// TypeScript compiler checks this file against the types — a key the
// types declare and the schema leaves out, a key the schema adds, an
// optional key marked required (or the reverse), or a value of the wrong
// kind does not compile — so the schema is the types, readable at run
// time. contract.test.ts compares the daemon's real replies with it.
//
// A field added to ctl/api.go goes into src/types.ts first; tsc then
// names the schema entry it needs here.

import type * as T from "../src/types.js";

/** How a value is checked at run time. */
export type Node =
  | "string"
  | "number"
  | "boolean"
  | { array: Node }
  | { map: Node }
  | { object: { [key: string]: Node | { optional: Node } } };

/** The check for a value of type V (a string-literal union is a string). */
type Check<V> = [V] extends [string]
  ? "string"
  : [V] extends [number]
    ? "number"
    : [V] extends [boolean]
      ? "boolean"
      : [V] extends [readonly (infer E)[]]
        ? { array: Check<E> }
        : [V] extends [object]
          ? string extends keyof V
            ? { map: Check<V[string & keyof V]> }
            : { object: Shape<V> }
          : never;

/** Every key of V, optional ones wrapped in { optional }. */
export type Shape<V> = {
  [K in keyof V]-?: {} extends Pick<V, K> ? { optional: Check<Exclude<V[K], undefined>> } : Check<V[K]>;
};

const opt = <const N extends Node>(n: N) => ({ optional: n });

const agentScope: Shape<T.AgentScope> = {
  uids: opt({ array: "number" }),
  pids: opt({ array: "number" }),
  cgroups: opt({ array: "string" }),
};

const turn: Shape<T.Turn> = {
  num: "number",
  id: opt("string"),
  anchor: opt("string"),
  state: "string",
  began_at: "string",
  ended_at: opt("string"),
  changed_paths: "number",
  records: "number",
  journal_bytes: "number",
  not_agent_paths: opt("number"),
  agent: opt({ object: agentScope }),
};

const prunedEarly: Shape<T.PrunedEarly> = { through: "number", reason: "string", time: "string" };

const turnList: Shape<T.TurnList> = {
  turns: { array: { object: turn } },
  outside_turns: "number",
  pruned_early: opt({ object: prunedEarly }),
};

const change: Shape<T.Change> = {
  path: "string",
  kind: "string",
  from: opt("string"),
  type: "string",
  bytes: "number",
  pid: "number",
  uid: "number",
  command: "string",
  command_line: opt("string"),
  time: "string",
  step: opt("string"),
  outside: opt("boolean"),
  agent: opt("boolean"),
};

const turnDetail: Shape<T.TurnDetail> = { ...turn, changes: { array: { object: change } } };

const step: Shape<T.Step> = {
  id: "string",
  name: opt("string"),
  began_at: opt("string"),
  changed_paths: "number",
  not_agent_paths: opt("number"),
  changes: { array: { object: change } },
};

const stepList: Shape<T.StepList> = { turn: "number", steps: { array: { object: step } } };

const outsideChanges: Shape<T.OutsideChanges> = { changes: { array: { object: change } } };

const resources: Shape<T.Resources> = {
  goroutines: "number",
  open_files: "number",
  rss_bytes: "number",
  max_rss_bytes: "number",
};

const status: Shape<T.Status> = {
  version: "string",
  workspace: "string",
  mountpoint: "string",
  journal: "string",
  socket: "string",
  listen: opt("string"),
  pid: "number",
  started_at: "string",
  window: "number",
  sync: "boolean",
  open_turn: opt({ object: turn }),
  turns: "number",
  oldest_turn: opt("number"),
  latest_turn: opt("number"),
  journal_bytes: "number",
  content_bytes: "number",
  free_bytes: "number",
  max_journal_bytes: "number",
  pruned_early: opt({ object: prunedEarly }),
  journal_error: opt("string"),
  unrevertable: "number",
  resources: { object: resources },
  full_scan: opt("string"),
  fuse_requests: opt({ map: "number" }),
};

const pathAction: Shape<T.PathAction> = {
  path: "string",
  action: "string",
  type: "string",
  reason: opt("string"),
  from: opt("string"),
  to: opt("string"),
  note: opt("string"),
  retried: opt("boolean"),
};

const counts: Shape<T.RollbackCounts> = {
  restored: "number",
  recovered: "number",
  deleted: "number",
  skipped: "number",
  dirs_removed: "number",
  dirs_recreated: "number",
};

const marker: Shape<T.Marker> = {
  turn: "number",
  id: opt("string"),
  anchor: opt("string"),
  created_at: "string",
  note: "string",
  replaces: { optional: { array: { object: {} as Shape<T.Marker> } } },
};
// The markers a marker replaced are markers (whose own replaces the
// server leaves out).
marker.replaces.optional.array.object = marker;

const rollbackResult: Shape<T.RollbackResult> = {
  target: "number",
  dry_run: opt("boolean"),
  unrevert: opt("boolean"),
  rollback: opt("number"),
  paths: { array: { object: pathAction } },
  counts: { object: counts },
  marker: opt({ object: marker }),
  complete: "boolean",
  failure: opt("string"),
};

const markerList: Shape<T.MarkerList> = { markers: { array: { object: marker } } };

const stepStarted: Shape<T.StepStarted> = { turn: "number", id: "string", name: opt("string") };

const event: Shape<T.Event> = {
  seq: "number",
  time: "string",
  type: "string",
  turn: opt("number"),
  step: opt("string"),
  path: opt("string"),
  kind: opt("string"),
  from: opt("string"),
  bytes: opt("number"),
  pid: opt("number"),
  uid: opt("number"),
  command: opt("string"),
  command_line: opt("string"),
  outside: opt("boolean"),
  agent: opt("boolean"),
  id: opt("string"),
  anchor: opt("string"),
  name: opt("string"),
  rollback: opt("number"),
  target: opt("number"),
  counts: opt({ object: counts }),
  marker: opt({ object: marker }),
  failure: opt("string"),
  reason: opt("string"),
  message: opt("string"),
};

const diffFile: Shape<T.DiffFile> = {
  path: "string",
  from: opt("string"),
  status: "string",
  binary: opt("boolean"),
  too_large: opt("boolean"),
  added: "number",
  removed: "number",
  diff: opt("string"),
  note: opt("string"),
  agent: opt("boolean"),
};

const diff: Shape<T.Diff> = { from: "string", to: "string", files: { array: { object: diffFile } } };

const purged: Shape<T.Purged> = { removed: { array: "string" } };

const errorBody: Shape<T.ErrorBody> = {
  code: "string",
  message: "string",
  oldest: opt("number"),
  latest: opt("number"),
};

/** Each reply's schema, by the name of its type in src/types.ts. */
export const schema = {
  Turn: { object: turn },
  TurnList: { object: turnList },
  TurnDetail: { object: turnDetail },
  StepList: { object: stepList },
  OutsideChanges: { object: outsideChanges },
  Status: { object: status },
  RollbackResult: { object: rollbackResult },
  MarkerList: { object: markerList },
  StepStarted: { object: stepStarted },
  Event: { object: event },
  Diff: { object: diff },
  Purged: { object: purged },
  /** `{"error": ErrorBody}`. */
  ErrorReply: { object: { error: { object: errorBody } } },
} satisfies Record<string, Node>;

/**
 * What differs between a reply and its schema, one line per difference,
 * each naming its place (`status.resources.goroutines`): a key the types
 * do not declare, a required key missing, a value of another kind.
 */
export function mismatches(value: unknown, node: Node, at: string): string[] {
  const out: string[] = [];
  walk(value, node, at, out);
  return out;
}

function walk(v: unknown, node: Node, at: string, out: string[]): void {
  if (typeof node === "string") {
    if (typeof v !== node) out.push(`${at}: a ${typeof v}, the types say ${node}`);
    return;
  }
  if ("array" in node) {
    if (!Array.isArray(v)) {
      out.push(`${at}: not an array`);
      return;
    }
    v.forEach((x, i) => walk(x, node.array, `${at}[${i}]`, out));
    return;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    out.push(`${at}: not an object`);
    return;
  }
  const obj = v as Record<string, unknown>;
  if ("map" in node) {
    for (const [k, x] of Object.entries(obj)) walk(x, node.map, `${at}.${k}`, out);
    return;
  }
  for (const [k, x] of Object.entries(obj)) {
    const field = node.object[k];
    if (field === undefined) {
      out.push(`${at}.${k}: sent by the server, not declared in the types`);
      continue;
    }
    walk(x, typeof field === "object" && "optional" in field ? field.optional : field, `${at}.${k}`, out);
  }
  for (const [k, field] of Object.entries(node.object)) {
    const optional = typeof field === "object" && "optional" in field;
    if (!optional && !(k in obj)) out.push(`${at}.${k}: declared required in the types, not sent by the server`);
  }
}
