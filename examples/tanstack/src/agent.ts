// A small coding agent on TanStack AI's chat loop, in a workspace cowfs
// has mounted, and the few lines a harness needs to make it rewindable:
//
//   - each user message begins a turn, anchored at the message's id;
//   - each model step is marked before its tools run (a chat middleware),
//     and each tool call within it, so every file change names the tool
//     call that made it — shell commands included;
//   - /undo, /redo, /revert MESSAGE-ID and /unrevert call the history and
//     cut the conversation at the message the result names (or put back
//     what was cut), so messages and files always match.

import { History, type FileChangedEvent, type RewindResult } from "@cowfs/client";
import { chat, maxIterations, StreamProcessor, type AnyTextAdapter, type ChatMiddleware, type UIMessage } from "@tanstack/ai";

import { workspaceTools } from "./tools.js";

export interface AgentOptions {
  /** The workspace, mounted with `cowfs mount`. */
  workspace: string;
  /** The model: any TanStack AI text adapter. */
  adapter: AnyTextAdapter;
  /** The history to use (default: History.open on the workspace). */
  history?: History;
}

/** A stretch of conversation a rewind cut off, and the note its marker left for the model. */
interface Cut {
  messages: UIMessage[];
  note?: string;
}

export class CodingAgent {
  readonly workspace: string;
  readonly history: History;
  /** The conversation, as TanStack AI's UI messages. */
  messages: UIMessage[] = [];

  private readonly adapter: AnyTextAdapter;
  private readonly tools: ReturnType<typeof workspaceTools>;
  /** What rewinds since the last message cut, latest last: redo and unrevert put it back. */
  private cuts: Cut[] = [];
  private sent = 0;

  private constructor(opts: Required<AgentOptions>) {
    this.workspace = opts.workspace;
    this.adapter = opts.adapter;
    this.history = opts.history;
    this.tools = workspaceTools(opts.workspace);
  }

  static async open(opts: AgentOptions): Promise<CodingAgent> {
    const history = opts.history ?? (await History.open({ workspace: opts.workspace }));
    return new CodingAgent({ ...opts, history });
  }

  async close(): Promise<void> {
    await this.history.close();
  }

  /** Shows file changes as they happen (shell commands' too). Returns a function that stops it. */
  onFileChanged(cb: (e: FileChangedEvent) => void): () => void {
    return this.history.onFileChanged(cb);
  }

  /** One line from the user: a command, or a message for the agent. Returns what to show. */
  async input(line: string): Promise<string> {
    const [cmd, arg] = line.trim().split(/\s+/, 2);
    switch (cmd) {
      case "/undo":
        return this.undo();
      case "/redo":
        return this.redo();
      case "/revert":
        if (!arg) return "usage: /revert MESSAGE-ID";
        return this.revert(arg);
      case "/unrevert":
        return this.unrevert();
      default:
        return this.send(line);
    }
  }

  /** A user message: one turn of the agent loop. Returns the agent's final text. */
  async send(text: string): Promise<string> {
    const id = `msg-${++this.sent}`;
    await this.history.beginTurn({ id: `turn-${this.sent}`, anchor: id });
    // Beginning a turn made the rewinds before it final.
    const note = this.cuts[this.cuts.length - 1]?.note;
    this.cuts = [];
    const processor = new StreamProcessor({ initialMessages: this.messages });
    processor.addUserMessage(text, id);
    try {
      const stream = chat({
        adapter: this.adapter,
        messages: processor.getMessages(),
        tools: this.tools,
        systemPrompts: note === undefined ? [] : [note],
        middleware: [markSteps(this.history)],
        agentLoopStrategy: maxIterations(20),
      });
      await processor.process(stream);
    } finally {
      this.messages = processor.getMessages();
      await this.history.endTurn();
    }
    return lastText(this.messages);
  }

  async undo(): Promise<string> {
    const r = await this.history.undo();
    this.cut(r);
    return `Undid the last turn. Files restored: ${r.filesRestored}${skips(r)}`;
  }

  async redo(): Promise<string> {
    const r = await this.history.redo();
    this.messages.push(...(this.cuts.pop()?.messages ?? []));
    return `Redid the turn of ${r.messageId}. Files restored: ${r.filesRestored}${skips(r)}`;
  }

  async revert(messageId: string): Promise<string> {
    const r = await this.history.revert({ messageId });
    this.cut(r);
    return `Reverted to before ${messageId}. Files restored: ${r.filesRestored}${skips(r)}`;
  }

  async unrevert(): Promise<string> {
    const r = await this.history.unrevert();
    while (this.cuts.length > 0) this.messages.push(...this.cuts.pop()!.messages);
    return `Unreverted. Files restored: ${r.filesRestored}${skips(r)}`;
  }

  /** Truncates the conversation at the rewind's marker: that message and everything after it go. */
  private cut(r: RewindResult): void {
    const at = this.messages.findIndex((m) => m.id === r.marker?.messageId);
    this.cuts.push({ messages: at < 0 ? [] : this.messages.splice(at), note: r.marker?.note });
  }
}

/**
 * A chat middleware that marks each model step in the history before its
 * tools run, with the tool calls the model asked for, and then each tool
 * call as it starts (TanStack AI runs them one after another).
 */
export function markSteps(history: History): ChatMiddleware {
  let calls: string[] = [];
  let marked = false;
  return {
    name: "cowfs-steps",
    onIteration() {
      calls = [];
      marked = false;
    },
    onChunk(_ctx, chunk) {
      if (chunk.type === "TOOL_CALL_START") calls.push(chunk.toolCallId);
    },
    async onBeforeToolCall(ctx, call) {
      if (!marked) {
        marked = true;
        await history.step({ id: ctx.currentMessageId ?? `step-${ctx.iteration}`, toolCallIds: calls });
      }
      await history.toolCall(call.toolCallId);
    },
  };
}

function lastText(messages: UIMessage[]): string {
  const m = messages[messages.length - 1];
  if (m?.role !== "assistant") return "";
  return m.parts.map((p) => (p.type === "text" ? p.content : "")).join("");
}

function skips(r: RewindResult): string {
  return r.skipped.map((p) => `\n  left alone: ${p.path} (${p.reason ?? "skipped"})`).join("");
}
