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
//     the next user message makes that final;
//   - the conversation is kept in a file (conversation.ts), and where it
//     stands after rewinds is read back from the daemon, so a revert
//     survives a restart of the harness with its messages, and unrevert
//     still brings them back.

import { History, type FileChangedEvent, type RewindResult } from "@cowfs/client";
import { chat, maxIterations, StreamProcessor, type AnyTextAdapter, type ChatMiddleware, type UIMessage } from "@tanstack/ai";

import { loadConversation, saveConversation } from "./conversation.js";
import { workspaceTools } from "./tools.js";

export interface AgentOptions {
  /** The workspace, mounted with `cowfs mount`. */
  workspace: string;
  /** The model: any TanStack AI text adapter. */
  adapter: AnyTextAdapter;
  /** The file the conversation is kept in, outside the workspace; created if missing. */
  conversation: string;
  /** The history to use (default: History.open on the workspace). */
  history?: History;
}

export class CodingAgent {
  readonly workspace: string;
  readonly history: History;
  /** The conversation file. */
  readonly conversation: string;

  private readonly adapter: AnyTextAdapter;
  private readonly tools: ReturnType<typeof workspaceTools>;
  /**
   * The conversation at its live end. Rewinds do not drop messages from it
   * until the next user message makes them final: they move `shown`, the
   * number of messages the conversation has now, as the files move.
   */
  private live: UIMessage[] = [];
  private shown = 0;
  /** The note of the rollback the workspace stands at, for the model with the next message. */
  private note: string | undefined;
  /** User messages sent so far: the next is msg-(sent+1), in turn turn-(sent+1). */
  private sent = 0;

  private constructor(opts: Required<AgentOptions>) {
    this.workspace = opts.workspace;
    this.adapter = opts.adapter;
    this.history = opts.history;
    this.conversation = opts.conversation;
    this.tools = workspaceTools(opts.workspace);
  }

  /**
   * Opens the agent on a mounted workspace with the conversation kept in
   * opts.conversation: the messages as they were left, shown as the
   * rewinds standing in the daemon leave them.
   */
  static async open(opts: AgentOptions): Promise<CodingAgent> {
    const saved = await loadConversation(opts.conversation, opts.workspace);
    const history = opts.history ?? (await History.open({ workspace: opts.workspace }));
    const agent = new CodingAgent({ ...opts, history });
    agent.live = saved.messages;
    agent.sent = saved.sent;
    try {
      // A turn still open: the harness stopped during it. End it, so its
      // changes can be undone and the next message can begin a turn.
      if ((await history.client.status()).open_turn !== undefined) await history.endTurn();
      await agent.follow();
    } catch (err) {
      await agent.close();
      throw err;
    }
    return agent;
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
    // Rewinds may have been made elsewhere (the CLI) since the last look.
    await this.follow();
    const note = this.note;
    const id = `msg-${this.sent + 1}`;
    const processor = new StreamProcessor({ initialMessages: this.messages });
    processor.addUserMessage(text, id);
    // The cut conversation and the new message are written before the
    // turn begins and makes the rewinds final: a crash in between may lose
    // hidden messages that unrevert would have shown again, but never
    // shows messages whose turns are gone.
    const was = { live: this.live, sent: this.sent };
    this.live = processor.getMessages();
    this.sent++;
    this.shown = this.live.length;
    this.note = undefined;
    await this.save();
    try {
      await this.history.beginTurn({ id: `turn-${this.sent}`, anchor: id });
    } catch (err) {
      // No turn (busy: a partial rollback waits): nothing was sent.
      this.live = was.live;
      this.sent = was.sent;
      await this.save();
      await this.follow();
      throw err;
    }
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
      await this.save();
      await this.history.endTurn();
    }
    return lastText(this.live);
  }

  /** Moves the conversation as a rewind moved the files, and says what it did. */
  private async rewound(what: string, r: RewindResult): Promise<string> {
    await this.follow();
    if (!r.complete) {
      // A partial rollback left no marker and reverted no turn: the
      // conversation stays. Running it again finishes it; /redo undoes it.
      return `${what}: stopped part way (${r.failure}); the conversation is unchanged. Try again, or /redo.${skips(r)}`;
    }
    return `${what}. Files restored: ${r.filesRestored}${skips(r)}`;
  }

  /**
   * Shows the conversation as the daemon's history stands: the workspace
   * sits before the target of the latest rollback since the last message,
   * whose turn is the earliest one reverted (a rollback reverts its
   * target and every later turn; an unrevert brings back what the one
   * below it left). The conversation ends just before that turn's message,
   * whatever the rewinds were, whoever made them, and however often the
   * harness restarted since; with none standing, it is whole.
   */
  private async follow(): Promise<void> {
    const [{ turns }, { markers }] = await Promise.all([this.history.client.turns(), this.history.client.markers()]);
    const target = turns.find((t) => t.state === "reverted");
    const at = target === undefined ? -1 : this.live.findIndex((m) => m.id === target.anchor);
    this.shown = at >= 0 ? at : this.live.length;
    this.note = target === undefined ? undefined : markers.filter((m) => m.turn === target.num).pop()?.note;
  }

  private save(): Promise<void> {
    return saveConversation(this.conversation, this.workspace, { sent: this.sent, messages: this.live });
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
