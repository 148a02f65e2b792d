// A small coding agent on TanStack AI's chat loop, in a workspace cowfs
// has mounted, and the few lines a harness needs to make it rewindable:
//
//   - each user message begins a turn, anchored at the message's id;
//   - each model step is marked before its tools run (a chat middleware),
//     and each tool call within it, so every file change names the tool
//     call that made it — shell commands included;
//   - /undo, /redo, /revert MESSAGE-ID and /unrevert call the history and
//     move the conversation as the files moved: to before the message the
//     rollback's marker names, or back to where the undone rewinds started;
//     the next user message makes that final.

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

export class CodingAgent {
  readonly workspace: string;
  readonly history: History;

  private readonly adapter: AnyTextAdapter;
  private readonly tools: ReturnType<typeof workspaceTools>;
  /**
   * The conversation at its live end. Rewinds do not drop messages from it
   * until the next user message makes them final: they move `shown`, the
   * number of messages the conversation has now, as the files move.
   */
  private live: UIMessage[] = [];
  private shown = 0;
  /** The rewinds since the last message, oldest first: where each left the conversation before, and its marker's note. */
  private rewinds: Array<{ shown: number; note?: string }> = [];
  /** The last rollback stopped part way. */
  private partial = false;
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

  /** The conversation, as TanStack AI's UI messages. */
  get messages(): UIMessage[] {
    return this.live.slice(0, this.shown);
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
        return this.rewound("Undid the last turn", await this.history.undo());
      case "/redo":
        return this.rewound("Redid", await this.history.redo());
      case "/revert":
        if (!arg) return "usage: /revert MESSAGE-ID";
        return this.rewound(`Reverted to before ${arg}`, await this.history.revert({ messageId: arg }));
      case "/unrevert":
        return this.rewound("Unreverted", await this.history.unrevert());
      default:
        return this.send(line);
    }
  }

  /** A user message: one turn of the agent loop. Returns the agent's final text. */
  async send(text: string): Promise<string> {
    const id = `msg-${++this.sent}`;
    await this.history.beginTurn({ id: `turn-${this.sent}`, anchor: id });
    // Beginning a turn made the rewinds final: so is the cut conversation.
    const note = this.rewinds[this.rewinds.length - 1]?.note;
    this.rewinds = [];
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
      this.live = processor.getMessages();
      this.shown = this.live.length;
      await this.history.endTurn();
    }
    return lastText(this.live);
  }

  /**
   * Moves the conversation as a rewind moved the files: a rollback to
   * before a message shows the messages before it (fewer, or — after an
   * earlier rollback went further back — more); redo and unrevert go back
   * to where the rewinds they undid started.
   */
  private rewound(what: string, r: RewindResult): string {
    if (!r.complete) {
      // A partial rollback left no marker and is not on the stack: the
      // conversation stays. Running it again finishes it; /redo undoes it.
      this.partial = r.action === "undo" || r.action === "revert";
      return `${what}: stopped part way (${r.failure}); the conversation is unchanged. Try again, or /redo.${skips(r)}`;
    }
    let undone = r.results.length;
    if (this.partial && (r.action === "redo" || r.action === "unrevert")) {
      undone--; // the first unrevert undid the partial rollback
    }
    this.partial = false;
    if (r.action === "undo" || r.action === "revert") {
      const at = this.live.findIndex((m) => m.id === r.marker?.messageId);
      this.rewinds.push({ shown: this.shown, note: r.marker?.note });
      if (at >= 0) this.shown = at;
    } else {
      for (; undone > 0 && this.rewinds.length > 0; undone--) {
        this.shown = this.rewinds.pop()!.shown;
      }
    }
    return `${what}. Files restored: ${r.filesRestored}${skips(r)}`;
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
