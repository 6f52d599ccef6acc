// The golden check of the bits themselves: SHA-256 of the logits' bytes and of a greedy generation's tokens, on the
// fixed generated checkpoints (tiny and tiny-4b, seed 7) at fixed ids, in both precisions, on the CPU. Every machine's
// suite compares its hashes with the committed ones (test/golden/arithmetic.json, test/engine/golden-bits.test.ts), so
// a machine without AMX checks what an AMX machine made, and the other way round.
//
// Make (or extend the record of where they were confirmed) with:
//   node --import tsx test/golden/arithmetic-hashes.ts            (prints this machine's hashes on every path)
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Checkpoint } from '../../engine/checkpoint.ts';
import { kernelInfo, useIsa } from '../../engine/kernels.ts';
import { Gemma3Engine } from '../../engine/runtime.ts';
import type { Precision } from '../../engine/settings.ts';
import { CPU_ARITHMETIC } from '../../engine/arithmetic.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
export const GOLDEN_FILE = path.join(here, 'arithmetic.json');

/** The cases: each preset in each precision. */
export const CASES = ['tiny', 'tiny-4b'].flatMap((preset) =>
  (['bf16', 'float32'] as Precision[]).map((precision) => ({ preset, precision, name: `${preset}/${precision}` })),
);

export type Hashes = Record<string, { logits: string; tokens: string }>;

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** The hashes of one case: every position's logits at the golden ids (past the sliding window), chunked by 7, and 12
 * greedy tokens after the first 10 ids. */
export async function caseHashes(dir: string, precision: Precision): Promise<{ logits: string; tokens: string }> {
  const ids = (JSON.parse(readFileSync(path.join(here, 'tiny.json'), 'utf8')) as { ids: number[] }).ids;
  const checkpoint = Checkpoint.open(dir);
  const engine = await Gemma3Engine.create({ checkpoint, precision });
  try {
    const logits = await engine.logits(ids, { chunk: 7 });
    const [result] = await engine.generate([ids.slice(0, 10)], { maxNewTokens: 12 });
    return {
      logits: sha256(Buffer.from(logits.buffer, logits.byteOffset, logits.byteLength)),
      tokens: sha256(JSON.stringify(result!.outputIds)),
    };
  } finally {
    await engine.close();
    checkpoint.close();
  }
}

/** Every case's hashes on the path in force. */
export async function hashes(dirOf: (preset: string) => string): Promise<Hashes> {
  const out: Hashes = {};
  for (const { preset, precision, name } of CASES) out[name] = await caseHashes(dirOf(preset), precision);
  return out;
}

// Run as a program: this machine's hashes on every path (and the arithmetic's names), as JSON.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { fixtureCheckpoint } = await import('../fixtures.ts');
  const { makeTinyCheckpoint } = await import('../../engine/tiny-checkpoint.ts');
  const { existsSync } = await import('node:fs');
  const { FIXTURE_SEED } = await import('../fixtures.ts');
  for (const preset of ['tiny', 'tiny-4b'] as const)
    if (!existsSync(fixtureCheckpoint(preset)))
      makeTinyCheckpoint({ out: fixtureCheckpoint(preset), preset, seed: FIXTURE_SEED });
  const info = kernelInfo();
  const byPath: Record<string, Hashes> = {};
  for (const isa of info.available) {
    if (isa !== 'javascript') useIsa(isa);
    byPath[isa] = await hashes((preset) => fixtureCheckpoint(preset as 'tiny' | 'tiny-4b'));
  }
  console.log(
    JSON.stringify({ arithmetic: CPU_ARITHMETIC, cpu: (await import('node:os')).cpus()[0]?.model, byPath }, null, 2),
  );
}
