// npx iwibench bench weights [--model-dir DIR] [--repeats 7] [--episodes 8]
// The weight store on a gemma-3-1b-shape checkpoint (made in the temp folder on first use, shared with `bench
// engine`):
//   - latency of a small write (fill of 8 elements) until the next run sees it through the episode's WeightSource,
//     on an MLP matrix [6912, 1152] and on the embedding [262144, 1152]: the first write of an episode (copy on
//     write of the tensor's BF16 bits) and a later one (in place). Reference in the same run: a plain copy of the
//     tensor's BF16 bytes into fresh memory. Goal: first write ≤ 3× the BF16 copy.
//   - memory added by N episodes that each edit one MLP matrix (down_proj of layer i), against one model.
// Each latency is the median of `repeats` tries, interleaved with the references (the machine may be shared).
// Copies and episodes stay alive until a tensor's tries end (up to 1 GiB), so every copy, the reference's and the
// write's, lands in fresh pages: otherwise the allocator hands a small copy the pages its predecessor just freed
// and the reference measures memcpy while the write measures page faults.
// Prints one JSON object on stdout.
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import {
  Checkpoint,
  embedTokensName,
  f32ToBf16Bits,
  layerTensorNames,
  makeTinyCheckpoint,
} from '../../engine/index.ts';
import { WeightStore } from '../../service/weights/index.ts';
import { parseFlags } from '../args.ts';
import { benchHeader } from './header.ts';

// --- flags --------------------------------------------------------------------------------------------------------
const defaults = {
  'model-dir': undefined as string | undefined, // default: $TMPDIR/iwibench-bench-gemma-3-1b-shape (made if missing)
  repeats: 7, // tries per latency figure; the median is reported
  episodes: 8, // episodes in the memory figure, each editing one MLP matrix
};
// -------------------------------------------------------------------------------------------------------------------

const MiB = 1024 * 1024;
const KEEP_ALIVE_BYTES = 1024 * MiB;

/** Full garbage collections, so memory figures count live arrays only (freed backing stores go after a task turn). */
async function collectGarbage(): Promise<void> {
  v8.setFlagsFromString('--expose_gc');
  const gc = vm.runInNewContext('gc') as () => void;
  for (let i = 0; i < 2; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function ms(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults);
  const dir = flags['model-dir'] ?? path.join(os.tmpdir(), 'iwibench-bench-gemma-3-1b-shape');
  if (!flags['model-dir'] && !existsSync(dir)) {
    process.stderr.write(`making gemma-3-1b-shape checkpoint in ${dir} …\n`);
    makeTinyCheckpoint({ out: dir, preset: 'gemma-3-1b-shape', seed: 0 });
  }
  const checkpoint = Checkpoint.open(dir);
  const store = new WeightStore(checkpoint);
  const prefix = checkpoint.config.tensor_prefix;
  process.stderr.write('reading the pristine weights …\n');
  await collectGarbage();
  const before = process.memoryUsage();
  store.preload();
  const loaded = process.memoryUsage();

  let episodes = 0;
  const latency = (name: string) => {
    const bf16 = checkpoint.readBytes(name);
    const rows = { first_write_ms: [] as number[], later_write_ms: [] as number[], copy_bf16_ms: [] as number[] };
    const keepAlive = bf16.byteLength * 2 * flags.repeats <= KEEP_ALIVE_BYTES; // BF16 copy and overlay: 4 bytes an element
    const kept: unknown[] = [];
    for (let r = 0; r < flags.repeats; r++) {
      let start = process.hrtime.bigint();
      const copy16 = bf16.slice();
      rows.copy_bf16_ms.push(ms(start));
      if (copy16[1] !== bf16[1]) throw new Error('copy check failed');
      if (keepAlive) kept.push(copy16);

      const episode = store.createEpisode(`bench-${episodes++}`);
      const value = 0.5 + r;
      const bits = f32ToBf16Bits(value); // exact: 0.5, 1.5, … are BF16 values
      start = process.hrtime.bigint();
      episode.write({ op: 'fill', tensor: name, slice: [0, [0, 8]], value });
      const seen = store.source(episode.id).bf16(name)[0]; // what the engine reads at its next run
      rows.first_write_ms.push(ms(start));
      start = process.hrtime.bigint();
      episode.write({ op: 'fill', tensor: name, slice: [1, [0, 8]], value });
      const seenLater = store.source(episode.id).bf16(name)[checkpoint.info(name).shape[1]!];
      rows.later_write_ms.push(ms(start));
      if (seen !== bits || seenLater !== bits || store.pristineSource.bf16(name)[0] === bits)
        throw new Error(`write to ${name} not visible or leaked`);
      if (keepAlive) kept.push(episode.id);
      else store.dropEpisode(episode.id);
    }
    for (const id of kept) if (typeof id === 'string') store.dropEpisode(id);
    const figures = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, median(v)])) as Record<
      keyof typeof rows,
      number
    >;
    return {
      tensor: name,
      shape: checkpoint.info(name).shape,
      ...figures,
      first_write_over_copy_bf16: figures.first_write_ms / figures.copy_bf16_ms,
    };
  };
  process.stderr.write('write latency …\n');
  const writes = [latency(layerTensorNames(prefix, 0).gate_proj), latency(embedTokensName(prefix))];

  process.stderr.write(`memory of ${flags.episodes} episodes …\n`);
  await collectGarbage();
  const base = process.memoryUsage();
  for (let i = 0; i < flags.episodes; i++) {
    const name = layerTensorNames(prefix, i % checkpoint.config.num_hidden_layers).down_proj;
    store.createEpisode(`memory-${i}`).write({
      op: 'low_rank_add',
      tensor: name,
      slice: [
        [0, 16],
        [0, 16],
      ],
      alpha: 0.01,
      u: Array.from({ length: 16 }, () => [1]),
      v: Array.from({ length: 16 }, () => [1]),
    });
  }
  await collectGarbage();
  const after = process.memoryUsage();
  const accounted = store.memory();
  const overlayBytes = Object.values(accounted.overlayBytes).reduce((a, b) => a + b, 0);
  const modelBytes = accounted.pristineBytes;
  checkpoint.close();

  const report = {
    ...benchHeader('weights', { ...flags, 'model-dir': dir }),
    model: checkpoint.modelId,
    repeats: flags.repeats,
    writes,
    memory: {
      episodes: flags.episodes,
      edited_tensor: `${layerTensorNames(prefix, 0).down_proj} (one per episode, layers 0…${flags.episodes - 1})`,
      model_bf16_mib: modelBytes / MiB,
      model_load_added_array_buffers_mib: (loaded.arrayBuffers - before.arrayBuffers) / MiB,
      episodes_overlay_accounted_mib: overlayBytes / MiB,
      episodes_added_array_buffers_mib: (after.arrayBuffers - base.arrayBuffers) / MiB,
      episodes_added_rss_mib: (after.rss - base.rss) / MiB,
      episodes_added_over_model: (after.arrayBuffers - base.arrayBuffers) / modelBytes,
    },
    peak_rss_gib: process.resourceUsage().maxRSS / 1024 / 1024,
    load_average: os.loadavg(),
  };
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
}
