// Runs the demo session against a workspace cowfs has mounted, printing
// what the agent says and every file change as it happens.
//
//   cowfs mount --background /tmp/ws
//   node dist/src/main.js /tmp/ws
//   cowfs umount /tmp/ws

import * as path from "node:path";

import { CodingAgent } from "./agent.js";
import { demoCommands, demoMessages, demoScript } from "./demo.js";
import { scriptedText } from "./scripted-adapter.js";

const workspace = process.argv[2];
if (!workspace) {
  console.error("usage: main.js WORKSPACE   (mounted with cowfs mount)");
  process.exit(2);
}
const agent = await CodingAgent.open({ workspace: path.resolve(workspace), adapter: scriptedText(demoScript) });
agent.onFileChanged((e) => {
  const from = e.from === undefined ? "" : ` (from ${e.from})`;
  const who = e.cause ?? `${e.command}, ${e.toolCallId ?? "no tool call"}`;
  console.log(`  ${e.change} ${e.path}${from}  [${who}]`);
});
try {
  for (const line of [...demoMessages, ...demoCommands]) {
    console.log(`> ${line}`);
    console.log(await agent.input(line));
    console.log(`  messages: ${agent.messages.map((m) => m.id).join(" ") || "(none)"}`);
  }
} finally {
  await agent.close();
}
