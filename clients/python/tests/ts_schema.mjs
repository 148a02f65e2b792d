// The TypeScript client's side of the Python contract test: with
// "schema", prints clients/typescript/test/wire-schema.ts's schema as JSON
// (a marker's replaces, which holds markers, as {"cycle": true}); with
// "check", reads [[name, reply], ...] on stdin and prints the mismatches
// the TypeScript schema finds in those same replies.
//
// Usage: node ts_schema.mjs (schema|check) PATH/TO/dist/test/wire-schema.js

import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [mode, file] = process.argv.slice(2);
const { schema, mismatches } = await import(pathToFileURL(file).href);

/** A schema node as plain data; an object's fields inside themselves are a cycle. */
function dump(node, stack) {
  if (typeof node === "string") return node;
  if ("array" in node) return { array: dump(node.array, stack) };
  if ("map" in node) return { map: dump(node.map, stack) };
  if ("optional" in node) return { optional: dump(node.optional, stack) };
  if (stack.includes(node.object)) return { cycle: true };
  const out = {};
  for (const [k, v] of Object.entries(node.object)) out[k] = dump(v, [...stack, node.object]);
  return { object: out };
}

if (mode === "schema") {
  const out = {};
  for (const [name, node] of Object.entries(schema)) out[name] = dump(node, []);
  process.stdout.write(JSON.stringify(out));
} else if (mode === "check") {
  const replies = JSON.parse(readFileSync(0, "utf8"));
  const out = [];
  for (const [name, value] of replies) out.push(...mismatches(value, schema[name], name));
  process.stdout.write(JSON.stringify(out));
} else {
  throw new Error(`unknown mode ${mode}`);
}
