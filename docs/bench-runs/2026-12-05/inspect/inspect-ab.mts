// TREE=<worktree> node --import tsx docs/bench-runs/2026-12-05/inspect/inspect-ab.mts MODEL_DIR POSITIONS: ms of one inspection (median of 3)
const tree = process.env.TREE!;
const { Checkpoint } = await import(`${tree}/engine/checkpoint.ts`);
const { Gemma3Engine } = await import(`${tree}/engine/runtime.ts`);
const checkpoint = Checkpoint.open(process.argv[2]!);
const T = Number(process.argv[3]);
const engine = await Gemma3Engine.create({ checkpoint });
const ids = Array.from({ length: T + 1 }, (_, i) => 2 + ((i * 104_729) % 200_000));
await engine.inspect([{ ids: ids.slice(0, 8), start: 0, end: 7 }], { layers: [], topK: 5 });
const times: number[] = [];
for (let i = 0; i < 3; i++) {
  const t0 = performance.now();
  await engine.inspect([{ ids, start: 0, end: T }], { layers: [], topK: 5 });
  times.push(performance.now() - t0);
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ tree, model: checkpoint.modelId, positions: T, ms: Math.round(times[1]!) }));
await engine.close();
