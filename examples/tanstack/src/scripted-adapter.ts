// A deterministic TanStack AI text adapter: instead of asking a network
// model, it plays a script. For each user message (by its text) the
// script lists the model steps of the answer: tool calls to make, or a
// final text. The adapter streams each step as a real provider adapter
// does (AG-UI events: RUN_STARTED, TOOL_CALL_START/ARGS/END or
// TEXT_MESSAGE_*, RUN_FINISHED with finish reason tool_calls or stop), so
// chat()'s agent loop runs the tools and calls it again for the next step.
// Message and tool-call ids derive from the user message's id and the
// step's place, so a run is the same every time.

import { EventType, type DefaultMessageMetadataByModality, type ModelMessage, type StreamChunk, type TextOptions } from "@tanstack/ai";
import { BaseTextAdapter, type StructuredOutputOptions, type StructuredOutputResult } from "@tanstack/ai/adapters";

/** One model step: tool calls to make, or (with none) the final answer. */
export interface ScriptStep {
  text?: string;
  toolCalls?: Array<{ name: string; args: Record<string, unknown> }>;
}

/** User message text → the model steps that answer it. */
export type Script = Record<string, ScriptStep[]>;

/** What the adapter was asked, per call, for tests to look at. */
export interface ScriptedCall {
  messages: ModelMessage[];
  systemPrompts: string[];
}

export class ScriptedAdapter extends BaseTextAdapter<"scripted", Record<string, never>, readonly ["text"], DefaultMessageMetadataByModality> {
  readonly name = "scripted";
  readonly calls: ScriptedCall[] = [];
  private readonly script: Script;

  constructor(script: Script) {
    super({}, "scripted");
    this.script = script;
  }

  async *chatStream(options: TextOptions<Record<string, never>>): AsyncIterable<StreamChunk> {
    const messages = options.messages;
    this.calls.push({
      messages: [...messages],
      systemPrompts: (options.systemPrompts ?? []).map((p) => (typeof p === "string" ? p : p.content)),
    });
    const u = lastIndex(messages, (m) => m.role === "user");
    const user = messages[u];
    const runId = `run-${this.calls.length}`;
    const threadId = options.threadId ?? "thread";
    const now = () => Date.now();
    yield { type: EventType.RUN_STARTED, runId, threadId, timestamp: now() };
    const text = user === undefined ? "" : contentText(user);
    const steps = this.script[text];
    if (steps === undefined) {
      yield { type: EventType.RUN_ERROR, message: `the script has no answer to ${JSON.stringify(text)}`, timestamp: now() };
      return;
    }
    // Each finished step left one assistant message after the user's.
    const k = messages.slice(u + 1).filter((m) => m.role === "assistant").length;
    const step = steps[k] ?? { text: "Done." };
    const base = user?.id ?? `u${messages.filter((m) => m.role === "user").length}`;
    const messageId = `${base}-a${k + 1}`;
    const calls = step.toolCalls ?? [];
    if (step.text !== undefined || calls.length === 0) {
      yield { type: EventType.TEXT_MESSAGE_START, messageId, role: "assistant", timestamp: now() };
      yield { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: step.text ?? "Done.", timestamp: now() };
      yield { type: EventType.TEXT_MESSAGE_END, messageId, timestamp: now() };
    }
    for (const [i, call] of calls.entries()) {
      const toolCallId = `${base}-call-${k + 1}-${i + 1}`;
      yield { type: EventType.TOOL_CALL_START, toolCallId, toolCallName: call.name, toolName: call.name, parentMessageId: messageId, timestamp: now() };
      yield { type: EventType.TOOL_CALL_ARGS, toolCallId, delta: JSON.stringify(call.args), timestamp: now() };
      yield { type: EventType.TOOL_CALL_END, toolCallId, input: call.args, timestamp: now() };
    }
    yield {
      type: EventType.RUN_FINISHED,
      runId,
      threadId,
      finishReason: calls.length > 0 ? "tool_calls" : "stop",
      timestamp: now(),
    } as StreamChunk;
  }

  structuredOutput(_options: StructuredOutputOptions<Record<string, never>>): Promise<StructuredOutputResult<unknown>> {
    return Promise.reject(new Error("the scripted adapter has no structured output"));
  }
}

/** A scripted adapter for chat({ adapter }). */
export function scriptedText(script: Script): ScriptedAdapter {
  return new ScriptedAdapter(script);
}

function lastIndex<T>(xs: readonly T[], pred: (x: T) => boolean): number {
  for (let i = xs.length - 1; i >= 0; i--) if (pred(xs[i]!)) return i;
  return -1;
}

function contentText(m: ModelMessage): string {
  if (typeof m.content === "string") return m.content;
  if (Array.isArray(m.content)) {
    return m.content.map((p) => ("content" in p && typeof p.content === "string" ? p.content : "")).join("");
  }
  return "";
}
