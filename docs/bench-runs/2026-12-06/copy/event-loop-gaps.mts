// The service's long calls on the 1B shape, at once and in slices (core/steps.ts): a first copy of the embedding
// (604 MB; 12 s apart, as the VM takes freed memory back), a read_weights summary of it and of most of its rows
// reversed, and 50,000 of its rows as a handle; each one's time and the longest turn of the event loop meanwhile. Needs the 1B-shape checkpoint `bench engine` makes.
// npx tsx docs/bench-runs/2026-12-06/copy/event-loop-gaps.mts
import { runStepsInSlices } from '../../../../core/steps.ts';
import { Checkpoint, copyBf16, copyBf16Steps } from '../../../../engine/index.ts';
import { allocateBf16 } from '../../../../engine/weight-source.ts';
import { WeightStore } from '../../../../service/weights/store.ts';

/** What `run` took and the longest turn of the event loop while it ran, in ms. */
async function gapWhile<T>(run: () => T | Promise<T>): Promise<{ ms: number; gap: number; value: T }> {
  let last = performance.now(),
    gap = 0,
    on = true;
  const tick = () => {
    const t = performance.now();
    gap = Math.max(gap, t - last);
    last = t;
    if (on) setImmediate(tick);
  };
  setImmediate(tick);
  const start = performance.now();
  const value = await run();
  const ms = performance.now() - start;
  await new Promise((resolve) => setImmediate(resolve));
  on = false;
  return { ms, gap, value };
}

const slices = async () => {};
const n = 262144 * 1152; // the 1B embedding
const src = allocateBf16(n);
for (let i = 0; i < n; i += 4096) src[i] = i & 0xffff;
for (const sliced of [false, true, false, true]) {
  await new Promise((resolve) => setTimeout(resolve, 12000));
  const { ms, gap } = await gapWhile(() => (sliced ? runStepsInSlices(copyBf16Steps(src), slices) : copyBf16(src)));
  console.log(
    `${sliced ? 'in slices' : 'at once  '} copy of 604 MB: ${ms.toFixed(0)} ms; longest gap ${gap.toFixed(0)} ms`,
  );
}

const episode = new WeightStore(Checkpoint.open('/tmp/iwibench-bench-gemma-3-1b-shape')).createEpisode('x');
const E = 'model.embed_tokens.weight';
const requests = [
  { op: 'summary' as const, tensor: E },
  { op: 'summary' as const, tensor: E, slice: [[262_000, null, -1]] },
  { op: 'slice' as const, tensor: E, slice: [[0, 50_000]], as_handle: true },
];
episode.read({ op: 'metadata' });
episode.bits('model.embed_tokens.weight');
for (const request of requests)
  for (const sliced of [false, true, false, true]) {
    const { ms, gap } = await gapWhile(() => (sliced ? episode.readInSlices(request, slices) : episode.read(request)));
    const what = `${request.op}${request.slice ? ` ${JSON.stringify(request.slice)}` : ''}`;
    console.log(`${sliced ? 'in slices' : 'at once  '} ${what}: ${ms.toFixed(0)} ms; longest gap ${gap.toFixed(0)} ms`);
  }
