// The queue of pilot attempts (BullMQ on Redis) as the commands and the benchmark see it.
export {
  QUEUE_NAME,
  boundedConnection,
  checkQueue,
  queueConnection,
  withinBound,
  type QueueFlags,
} from './connection.ts';
export { attemptJob, parseAttemptJob, readableId, JOB_FORMAT, type AttemptJob } from './job.ts';
export {
  attemptSettings,
  editorForSettings,
  settingsDiff,
  settingsHash,
  workerArithmetic,
  type AttemptSettings,
} from './settings.ts';
export { laneName, listLanes } from './lanes.ts';
export { conflictLine, enqueueAttempts, type EnqueueOutcome, type RetryPolicy } from './enqueue.ts';
export { isTransient, throwIfTransientEditorError, TransientFailure } from './failures.ts';
export { queueStatus, statusText, unfinishedJobs, type QueueStatus } from './status.ts';
export { cleanFinished, pauseQueue, retryFailed } from './operate.ts';
export {
  attemptFolder,
  runUntilSignal,
  startWorker,
  type AttemptControl,
  type AttemptWorker,
  type JobResult,
} from './worker.ts';
export { claimCommit } from './fence.ts';
export { MAX_TIMER_MS, parseDuration } from './duration.ts';
