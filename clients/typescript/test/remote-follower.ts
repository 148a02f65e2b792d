// A harness's event loop, for remote.test.ts to kill: follows a remote
// daemon's events after argv's since, printing each as a JSON line the
// moment it arrives (what a harness would persist).
//
//   node remote-follower.js URL TLS_DIR SINCE

import { writeSync } from "node:fs";

import { CowfsClient } from "../src/index.js";

const [url, tlsDir, since] = process.argv.slice(2);
const c = new CowfsClient({ remote: url!, tlsDir: tlsDir! });
for await (const e of c.events({ since: Number(since), retryDelay: 20, maxRetryDelay: 200 })) {
  // Synchronous: the line is in the pipe before the next event is read.
  writeSync(1, JSON.stringify(e) + "\n");
}
