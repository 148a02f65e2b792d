// The conversation file: the agent's messages at their live end, kept
// across restarts of the harness. It holds only what the daemon does not:
// the messages and the counter that names the next one. Where the
// conversation stands after rewinds — which messages are hidden, the note
// for the model — is read from the daemon (the reverted turns, their
// markers), whose journal keeps its rollback stack across restarts too;
// so a revert needs no write here, and the file never disagrees with the
// files on disk about it.
//
// The file lives outside the workspace: inside it, the harness's own
// writes would be journaled into the agent's turns, and a rewind would
// rewind the conversation file with them.

import { promises as fs } from "node:fs";
import * as path from "node:path";

import type { UIMessage } from "@tanstack/ai";

/** What the file holds. */
export interface Conversation {
  /** User messages sent so far, rewound ones included: the next is msg-(sent+1). */
  sent: number;
  /** The conversation at its live end, hidden messages included. */
  messages: UIMessage[];
}

/** The file's format version. */
const version = 1;

/** Reads the conversation kept for workspace in file; an empty one if the file does not exist. */
export async function loadConversation(file: string, workspace: string): Promise<Conversation> {
  checkOutside(file, workspace);
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { sent: 0, messages: [] };
    throw err;
  }
  const saved = JSON.parse(text, revive) as { version: number; workspace: string } & Conversation;
  if (saved.version !== version) {
    throw new Error(`${file}: a conversation file of version ${saved.version}, not ${version}`);
  }
  if (saved.workspace !== workspace) {
    throw new Error(`${file} holds the conversation of ${saved.workspace}, not ${workspace}`);
  }
  return { sent: saved.sent, messages: saved.messages };
}

/**
 * Writes the conversation so that a crash leaves the old file or the new
 * one, never a mix: a temporary file, fsynced, renamed over the old one,
 * then the directory fsynced so the rename itself survives.
 */
export async function saveConversation(file: string, workspace: string, c: Conversation): Promise<void> {
  checkOutside(file, workspace);
  const dir = path.dirname(file);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp-${process.pid}`;
  const text = JSON.stringify({ version, workspace, sent: c.sent, messages: c.messages }, tagDates);
  const fh = await fs.open(tmp, "w", 0o600);
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fs.rename(tmp, file);
  const d = await fs.open(dir, "r");
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

function checkOutside(file: string, workspace: string): void {
  const rel = path.relative(workspace, path.resolve(file));
  const outside = rel === ".." || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel);
  if (!outside) {
    throw new Error(`the conversation file ${file} is inside the workspace ${workspace}: keep it outside, or rewinds would rewind it too`);
  }
}

// Messages carry Dates (createdAt), which JSON would turn into strings:
// they are written as {"$date": ISO} and read back as Dates, so a
// conversation reads back as it was written.

function tagDates(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key];
  return original instanceof Date ? { $date: original.toISOString() } : value;
}

function revive(_key: string, value: unknown): unknown {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const keys = Object.keys(value);
    const d = (value as { $date?: unknown }).$date;
    if (keys.length === 1 && typeof d === "string") return new Date(d);
  }
  return value;
}
