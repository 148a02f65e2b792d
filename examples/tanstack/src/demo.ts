// The demo session: three user messages whose answers run npm init, sed
// -i, rm -rf, mkdir -p, cp and mv and write files, then /undo, /redo, a revert to the first
// message and /unrevert. The model is scripted (no network), so the
// session runs the same every time; test/agent.test.ts checks it.

import type { Script } from "./scripted-adapter.js";

export const demoMessages = [
  "Start a Node project with a greeting module and a unit test.",
  "Say hi instead of hello, and drop the unit tests.",
  "Describe the package, build into build/out, and move the notes to docs/.",
] as const;

export const demoCommands = ["/undo", "/redo", "/revert msg-1", "/unrevert"] as const;

const bash = (command: string) => ({ name: "bash", args: { command } });
const write = (path: string, content: string) => ({ name: "write_file", args: { path, content } });

export const greetJs = 'export function greet(name) {\n  return "hello, " + name;\n}\n';
export const greetTestJs = 'import { greet } from "../../src/greet.js";\nif (greet("x") !== "hello, x") throw new Error("greet");\n';
export const notesMd = "# Notes\n\nThe greeting says hi; the unit tests are gone.\n";
export const readmeMd = "# ws\n\nbuild/out/ holds the built module.\n";

/** A message after a rewind: its answer needs no tools. */
export const thanks = "Thanks, that is all.";

export const demoScript: Script = {
  [thanks]: [{ text: "You are welcome." }],
  [demoMessages[0]]: [
    { toolCalls: [bash("npm init -y >/dev/null")] },
    { toolCalls: [write("src/greet.js", greetJs)] },
    // One model step, two tool calls.
    { toolCalls: [bash("mkdir -p test/unit"), write("test/unit/greet.test.js", greetTestJs)] },
    { text: "Created package.json, src/greet.js and a unit test." },
  ],
  [demoMessages[1]]: [
    { toolCalls: [bash("sed -i 's/hello/hi/' src/greet.js")] },
    { toolCalls: [bash("rm -rf test")] },
    { toolCalls: [write("NOTES.md", notesMd)] },
    { text: "The greeting says hi now, and the tests are gone." },
  ],
  [demoMessages[2]]: [
    { toolCalls: [bash(`sed -i 's/"description": ""/"description": "Greets people."/' package.json`)] },
    { toolCalls: [bash("mkdir -p build/out && cp src/greet.js build/out/")] },
    { toolCalls: [bash("mkdir -p docs && mv NOTES.md docs/NOTES.md"), write("README.md", readmeMd)] },
    { text: "Described the package, built it, and moved the notes." },
  ],
};
