// Work that can pause: a generator that yields between steps of bounded size and returns its result. The service's
// queue runs it in slices, so that one long call lets the event loop and the other lanes run between its steps (a
// summary of the 1B embedding streams 302 M values, 4–8 s at once on this project's machines; a first write copies
// its 604 MB, 1.3 s); anything else runs it at once. The result is the same either way: pausing changes no order of
// work.
import { setImmediate as nextTurn } from 'node:timers/promises';

export type Steps<T> = Generator<void, T, void>;

/** Runs every step now and returns the result. */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Runs the steps, awaiting the event loop's next turn and then `between` after each (the queue's slice). */
export async function runStepsInSlices<T>(steps: Steps<T>, between: () => Promise<void>): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await nextTurn();
    await between();
  }
}
