// The agent's two tools, TanStack AI tool definitions with server-side
// implementations: `bash` runs a command with `sh -c` in the workspace,
// `write_file` writes a file there. Neither knows about cowfs: whatever
// they (and the programs bash starts) do to the workspace goes through
// the mount and is journaled.

import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import * as path from "node:path";

import { toolDefinition } from "@tanstack/ai";

/** How long one bash command may run. */
const bashTimeoutMs = 120_000;

export const bashDef = toolDefinition({
  name: "bash",
  description: "Run a shell command in the workspace and return its exit code and output.",
  inputSchema: {
    type: "object",
    properties: { command: { type: "string", description: "the command, run with sh -c" } },
    required: ["command"],
  },
});

export const writeFileDef = toolDefinition({
  name: "write_file",
  description: "Write a file in the workspace (creating its directory), replacing it if it exists.",
  inputSchema: {
    type: "object",
    properties: {
      path: { type: "string", description: "relative to the workspace" },
      content: { type: "string" },
    },
    required: ["path", "content"],
  },
});

/** The tools, working in workspace. */
export function workspaceTools(workspace: string) {
  const bash = bashDef.server(async (args) => {
    const command = stringArg(args, "command");
    return runShell(command, workspace);
  });
  const writeFile = writeFileDef.server(async (args) => {
    const rel = stringArg(args, "path");
    const content = stringArg(args, "content");
    const p = path.resolve(workspace, rel);
    if (p !== workspace && !p.startsWith(workspace + path.sep)) {
      throw new Error(`${rel} is outside the workspace`);
    }
    await fs.mkdir(path.dirname(p), { recursive: true });
    await fs.writeFile(p, content);
    return { written: rel, bytes: Buffer.byteLength(content) };
  });
  return [bash, writeFile];
}

function stringArg(args: unknown, name: string): string {
  const v = (args as Record<string, unknown> | null)?.[name];
  if (typeof v !== "string") {
    throw new Error(`${name} must be a string`);
  }
  return v;
}

function runShell(command: string, cwd: string): Promise<{ exitCode: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", command], { cwd, stdio: ["ignore", "pipe", "pipe"], timeout: bashTimeoutMs });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (exitCode) => resolve({ exitCode, stdout, stderr }));
  });
}
