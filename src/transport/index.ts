/** Transports: the process dispatcher and its JSON-lines protocol; where a deployment's Effects run (placement). */
export { JsonLinesWorker, type JsonLinesWorkerOptions, type RequestOptions, type RequestOutcome } from './json-lines-worker.js';
export { maxLineBytes, parseWorkerLine, requestLine, type AnswerStatus, type WorkerLine } from './json-lines-protocol.js';
export { LineSplitter } from './line-splitter.js';
export { ProcessDispatchError, ProcessDispatchErrorCode } from './process-dispatch-error.js';
export { ProcessDispatcher, type ProcessDispatcherOptions } from './process-dispatcher.js';
export { isOwnerDispatched, ownerDispatched, queueDispatched, transportOf, type TransportKind } from './placement.js';
export { resolvesFromLateReports, trustsLateReports } from './late-reports.js';
export {
  parseProcessDispatcherConfig,
  processDispatcherConfigJson,
  processDispatcherFingerprint,
  type ProcessDispatcherConfig,
} from './process-dispatcher-config.js';
