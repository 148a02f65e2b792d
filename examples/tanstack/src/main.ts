// Runs the agent on a workspace cowfs has mounted: each LINE is a message
// or a command (/undo, /redo, /revert MESSAGE-ID, /unrevert); with none,
// the demo session. Prints what the agent says, the conversation's
// message ids and every file change as it happens. The conversation is
// kept in a file, so a later run goes on where this one stopped — a
// revert included, which a later /unrevert still takes back.
//
//   cowfs mount --background /tmp/ws
//   node dist/src/main.js /tmp/ws
//   node dist/src/main.js /tmp/ws '/revert msg-2'
//   node dist/src/main.js /tmp/ws /unrevert
//   cowfs umount /tmp/ws

import { createHash } from "node:crypto";
import { homedir } from "node:os";
import * as path from "node:path";

import { CowfsError } from "@cowfs/client";

import { CodingAgent } from "./agent.js";
import { demoCommands, demoMessages, demoScript } from "./demo.js";
import { scriptedText } from "./scripted-adapter.js";

const usage = "usage: main.js WORKSPACE [--conversation FILE] [LINE...]   (WORKSPACE mounted with cowfs mount)";

const args = process.argv.slice(2);
let conversation: string | undefined;
const i = args.indexOf("--conversation");
if (i >= 0) {
  conversation = args[i + 1];
  args.splice(i, 2);
}
const [arg, ...lines] = args;
if (!arg || (i >= 0 && !conversation)) {
  console.error(usage);
  process.exit(2);
}
const workspace = path.resolve(arg);
conversation = path.resolve(conversation ?? defaultConversation(workspace));

const agent = await CodingAgent.open({ workspace, conversation, adapter: scriptedText(demoScript) });
agent.onFileChanged((e) => {
  const from = e.from === undefined ? "" : ` (from ${e.from})`;
  const who = e.cause ?? `${e.command}, ${e.toolCallId ?? "no tool call"}`;
  console.log(`  ${e.change} ${e.path}${from}  [${who}]`);
});
try {
  for (const line of lines.length > 0 ? lines : [...demoMessages, ...demoCommands]) {
    console.log(`> ${line}`);
    try {
      console.log(await agent.input(line));
    } catch (err) {
      // The daemon's refusal (nothing to redo, a turn out of the window)
      // is an answer to show; the session goes on.
      if (!(err instanceof CowfsError)) throw err;
      console.log(`error: ${err.message}`);
      process.exitCode = 1;
    }
    console.log(`  messages: ${agent.messages.map((m) => m.id).join(" ") || "(none)"}`);
  }
} finally {
  await agent.close();
}

/** Where the conversation of workspace is kept by default: under the user's state directory, outside the workspace. */
function defaultConversation(ws: string): string {
  const state = process.env.XDG_STATE_HOME || path.join(homedir(), ".local", "state");
  const hash = createHash("sha256").update(ws).digest("hex").slice(0, 12);
  return path.join(state, "cowfs-example-tanstack", `${path.basename(ws)}-${hash}.json`);
}
