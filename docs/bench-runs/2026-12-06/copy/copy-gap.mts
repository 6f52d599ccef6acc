// A first copy of the 1B embedding (604 MB) at once and in slices: its time and the longest turn of the event loop
// meanwhile, 12 s apart (the VM takes freed memory back). npx tsx docs/bench-runs/2026-12-06/copy/copy-gap.mts
const { copyBf16, copyBf16Steps, allocateBf16 } = (await import('../../../../engine/weight-source.ts')) as any;
const { runStepsInSlices } = await import('../../../../core/steps.ts');
const n = 262144 * 1152; // the 1B embedding
const src = allocateBf16(n);
for (let i = 0; i < n; i += 4096) src[i] = i & 0xffff;
for (const sliced of [false, true, false, true]) {
  await new Promise((r) => setTimeout(r, 12000)); // let the host take freed memory back
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
  const copy = sliced ? await runStepsInSlices(copyBf16Steps(src), async () => {}) : copyBf16(src);
  const ms = performance.now() - t;
  await new Promise((r) => setImmediate(r));
  on = false;
  console.log(
    sliced ? 'in slices' : 'at once  ',
    'copy of 604 MB:',
    ms.toFixed(0),
    'ms; longest event-loop gap',
    gap.toFixed(0),
    'ms',
    copy[4096],
  );
}
