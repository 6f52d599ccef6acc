// A read_weights summary of the 1B embedding at once and in slices: its time and the longest turn of the event loop
// meanwhile (the 1B-shape checkpoint `bench engine` makes). npx tsx docs/bench-runs/2026-12-06/copy/summary-gap.mts
import { WeightStore } from '../../../../service/weights/store.ts';
import { Checkpoint } from '../../../../engine/index.ts';
const store = new WeightStore(Checkpoint.open('/tmp/iwibench-bench-gemma-3-1b-shape'));
const e = store.createEpisode('x');
store.pristineBits('model.embed_tokens.weight');
const r = { op: 'summary', tensor: 'model.embed_tokens.weight' } as const;
for (const sliced of [false, true]) {
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
  const t = performance.now();
  const out: any = sliced ? await e.readInSlices(r as any, async () => {}) : e.read(r as any);
  const ms = performance.now() - t;
  await new Promise((res) => setImmediate(res));
  on = false;
  console.log(
    sliced ? 'in slices' : 'at once  ',
    'summary of the 1B embedding:',
    ms.toFixed(0),
    'ms; longest event-loop gap',
    gap.toFixed(0),
    'ms; std',
    out.std,
  );
}
