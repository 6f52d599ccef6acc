// The progress of an evaluation, in one definition: what it reports, how an evaluation process hands it to its
// parent, and where a command's display hears it. The evaluator (evaluate.ts's ItemEvaluator) emits on
// `evaluationProgress` in whatever process it runs; an evaluation process (evaluate-worker.ts) forwards its events to
// its parent over the IPC channel, and the parent (evaluateInFreshProcess) emits them again there, naming the
// evaluation by its out file. An event bus rather than a callback handed down: a command sees the progress of every
// evaluation it runs, however deep it starts one.
import { EventEmitter } from 'node:events';

export type EvaluationPhase = 'loading' | 'pristine' | 'patched';

/** One report: items done of total in this phase, and the tokens generated in it so far over its seconds. */
export type EvaluationProgress = {
  phase: EvaluationPhase;
  done: number;
  total: number;
  generatedTokens: number;
  seconds: number;
  /** In a parent: the evaluation process's out file (which evaluation this is); absent in-process. */
  out?: string;
};

/** The message an evaluation process sends its parent. */
type ProgressMessage = { type: typeof MESSAGE_TYPE; progress: EvaluationProgress };
const MESSAGE_TYPE = 'iwibench-evaluation-progress';

export const evaluationProgress = new EventEmitter<{ progress: [EvaluationProgress] }>();

/** The evaluator loads its checkpoint (and patch). */
export function reportLoading(): void {
  evaluationProgress.emit('progress', { phase: 'loading', done: 0, total: 0, generatedTokens: 0, seconds: 0 });
}

/** A phase of `total` items starts now; `add` reports each batch as it ends. */
export function startPhase(phase: 'pristine' | 'patched', total: number): { add(items: number, tokens: number): void } {
  const started = performance.now();
  let done = 0;
  let generatedTokens = 0;
  const emit = () =>
    evaluationProgress.emit('progress', {
      phase,
      done,
      total,
      generatedTokens,
      seconds: (performance.now() - started) / 1000,
    });
  emit();
  return {
    add(items, tokens) {
      done += items;
      generatedTokens += tokens;
      emit();
    },
  };
}

/** In an evaluation process: hand every report to the parent over the IPC channel, when there is one. */
export function forwardProgressToParent(): void {
  if (!process.send) return;
  process.channel?.unref(); // the channel must not keep the process alive once its work is done
  evaluationProgress.on('progress', (progress) => process.send!({ type: MESSAGE_TYPE, progress }));
}

/** In the parent: a message of evaluation process `out`, emitted here; anything else is ignored. */
export function relayProgress(message: unknown, out: string): void {
  const m = message as Partial<ProgressMessage> | null;
  if (m?.type === MESSAGE_TYPE && m.progress) evaluationProgress.emit('progress', { ...m.progress, out });
}
