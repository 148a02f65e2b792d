// The event stream as an async iterator that survives the daemon going
// away. GET /v1/events?since=SEQ&follow=1 sends every event after SEQ and
// then stays open; it ends when the daemon stops. The iterator remembers
// the last seq it yielded, and when the stream ends or breaks (or the
// daemon is not there yet) it connects again, with backoff, asking for
// events after that seq: nothing still in the window is lost, and since
// seq only grows (the journal keeps it across restarts), an event at or
// below the last yielded seq is a repeat and is dropped. The same holds
// over a remote's TLS connection, which breaks and is reopened as a
// socket's is; a TLSError (the daemon refused this client's certificate,
// or its own did not verify) ends the iteration instead, since trying
// again would only be refused again.

import type * as http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";

import { ConnectionError, NoDaemonError } from "./errors.js";
import { open, type Endpoint } from "./transport.js";
import type { Event } from "./types.js";

export interface EventsOptions {
  /** Start after this seq (0, the default: from the oldest event in the window). */
  since?: number;
  /**
   * Keep following: wait for new events, and reconnect when the daemon
   * restarts (default true). Without it the iterator ends with the latest
   * event.
   */
  follow?: boolean;
  /** Ends the iteration (the iterator returns, it does not throw). */
  signal?: AbortSignal;
  /** First wait before reconnecting, in ms (default 50); doubles up to maxRetryDelay. */
  retryDelay?: number;
  /** Longest wait between reconnects, in ms (default 2000). */
  maxRetryDelay?: number;
  /** Called each time the stream is lost and will be reopened after `since`. */
  onReconnect?: (info: { since: number; error?: Error }) => void;
}

/** An async iterable of events that knows the last seq it yielded. */
export interface EventStream extends AsyncIterable<Event> {
  /** The seq of the last event yielded (or `since`, before any). */
  readonly lastSeq: number;
}

/** The event stream of the daemon at a socket or a remote; see EventsOptions. */
export function eventStream(to: Endpoint, opts: EventsOptions = {}): EventStream {
  const state = { lastSeq: opts.since ?? 0 };
  return {
    get lastSeq() {
      return state.lastSeq;
    },
    [Symbol.asyncIterator]: () => iterate(to, opts, state),
  };
}

async function* iterate(to: Endpoint, opts: EventsOptions, state: { lastSeq: number }): AsyncGenerator<Event> {
  const follow = opts.follow ?? true;
  const minDelay = opts.retryDelay ?? 50;
  const maxDelay = opts.maxRetryDelay ?? 2000;
  const signal = opts.signal;
  let delay = minDelay;
  while (!signal?.aborted) {
    let lost: Error | undefined;
    let res: http.IncomingMessage | undefined;
    try {
      const q = `since=${state.lastSeq}${follow ? "&follow=1" : ""}`;
      res = await open(to, "GET", `/v1/events?${q}`, { signal });
      delay = minDelay;
      for await (const line of lines(res)) {
        const e = JSON.parse(line) as Event;
        switch (e.type) {
          case "gap":
            // Events up to e.seq left the window before we could see them.
            state.lastSeq = Math.max(state.lastSeq, e.seq);
            yield e;
            break;
          case "journal_error":
            // The journal is unusable until the daemon restarts on a usable
            // one; reconnecting would only repeat this.
            yield e;
            return;
          default:
            if (e.seq <= state.lastSeq) {
              break; // seen before a reconnect
            }
            state.lastSeq = e.seq;
            yield e;
        }
      }
    } catch (err) {
      if (signal?.aborted) {
        return;
      }
      if (!follow || !(err instanceof NoDaemonError || err instanceof ConnectionError || isStreamError(err))) {
        throw err;
      }
      lost = err as Error;
    } finally {
      res?.destroy();
    }
    if (!follow) {
      return;
    }
    // The stream ended (the daemon stopped) or could not be opened.
    opts.onReconnect?.({ since: state.lastSeq, error: lost });
    try {
      await sleep(delay, undefined, { signal });
    } catch {
      return; // aborted
    }
    delay = Math.min(delay * 2, maxDelay);
  }
}

/** A response body's lines, without the newline; a partial last line is dropped (the stream broke mid-event). */
async function* lines(res: http.IncomingMessage): AsyncGenerator<string> {
  let buf = "";
  res.setEncoding("utf8");
  for await (const chunk of res) {
    buf += chunk as string;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim() !== "") {
        yield line;
      }
    }
  }
}

/** Errors a body stream raises when the connection breaks under it. */
function isStreamError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  // A TLS record broken off mid-stream (ERR_SSL_...) is a broken connection too: the handshake was done.
  return (
    code === "ECONNRESET" ||
    code === "EPIPE" ||
    code === "ERR_STREAM_PREMATURE_CLOSE" ||
    code?.startsWith("ERR_SSL_") === true ||
    (err as Error)?.message === "aborted"
  );
}
