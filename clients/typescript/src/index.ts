// @cowfs/client: a client for the cowfs control socket (docs/api.md), or
// for a daemon's mutual-TLS listener on another machine, and a turn
// history for agent harnesses. Node's standard library only.

export { CowfsClient, type CallOptions, type ClientOptions } from "./client.js";
export {
  BadRequestError,
  BusyError,
  ConflictError,
  ConnectionError,
  CowfsError,
  ForbiddenError,
  InternalError,
  NoDaemonError,
  NotFoundError,
  OutOfWindowError,
  TLSError,
  type ClientErrorCode,
} from "./errors.js";
export { eventStream, type EventsOptions, type EventStream } from "./events.js";
export {
  History,
  type DiffOptions,
  type FileChange,
  type FileChangedEvent,
  type HistoryDiff,
  type HistoryMarker,
  type HistoryOptions,
  type RewindCause,
  type RewindOptions,
  type RewindResult,
} from "./history.js";
export { checkSocket, ForeignSocketError } from "./trust.js";
export { endpointFor, findWorkspace, locate, remoteFromEnv, socketFor, stateRoot, type Location } from "./locate.js";
export { parseRemote, readTLSDir, type Remote, type TLSMaterial } from "./remote.js";
export type { Endpoint } from "./transport.js";
export { pathBytes, pathQuery, pathString } from "./paths.js";
export type * from "./types.js";
