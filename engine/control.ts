// How a long engine call shares the target with others: it awaits `between` at each slice (a prefill chunk, a decode
// step, a layer of a large chunk), and an aborted signal stops it there.

export type CallControl = { signal?: AbortSignal; between?: () => Promise<void> };

/** One slice boundary: stop if aborted, let others run, stop if aborted meanwhile. */
export async function between(control: CallControl): Promise<void> {
  control.signal?.throwIfAborted();
  await control.between?.();
  control.signal?.throwIfAborted();
}
