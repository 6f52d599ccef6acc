// One chunk of a left-padded batch, as the forward pass takes it, and the row bookkeeping around it: which sequences
// prefill through the GEMM, their rows gathered and scattered back, the last row of each sequence.
import { PAD_ID } from './tokenizer.ts';

/**
 * T padded times from `start` of a left-padded batch of B sequences: ids [B·T] (PAD_ID in padding) and positions
 * (−1 in padding). `gemm[b]`: sequence b's rows take the prefill GEMM (by its own length); never in a decode step.
 */
export type Chunk = { ids: Int32Array; positions: Int32Array; start: number; T: number; gemm: boolean[] };

/** Which sequences of a call prefill through the GEMM: each by its own length alone, never by the batch's. */
export function gemmSequences(lengths: number[], minTokens: number): boolean[] {
  return lengths.map((length) => length >= minTokens);
}

/** T padded times from `start` of a left-padded batch: ids (PAD_ID in padding) and positions (−1 in padding). */
export function paddedChunk(prompts: number[][], pads: number[], start: number, T: number, gemm: boolean[]): Chunk {
  const B = prompts.length;
  const ids = new Int32Array(B * T);
  const positions = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const real = start + t - pads[b]!;
      ids[b * T + t] = real >= 0 ? prompts[b]![real]! : PAD_ID;
      positions[b * T + t] = real >= 0 ? real : -1;
    }
  }
  return { ids, positions, start, T, gemm };
}

/** Key positions [B, 1 + T]: a never-attended slot (−1), then each sequence's chunk positions. */
export function withNeverSlot(positions: Int32Array, B: number, T: number): Int32Array {
  const out = new Int32Array(B * (1 + T));
  for (let b = 0; b < B; b++) {
    out[b * (1 + T)] = -1;
    out.set(positions.subarray(b * T, (b + 1) * T), b * (1 + T) + 1);
  }
  return out;
}

/** The rows [b·T, (b + 1)·T) of the sequences b with chunk.gemm[b] === gemm, back to back. */
export function gatherSequences(x: Float32Array, chunk: Chunk, width: number, gemm: boolean): Float32Array {
  const block = chunk.T * width;
  const picked = chunk.gemm.flatMap((g, b) => (g === gemm ? [b] : []));
  const out = new Float32Array(picked.length * block);
  picked.forEach((b, i) => out.set(x.subarray(b * block, (b + 1) * block), i * block));
  return out;
}

/** The inverse of gatherSequences: rows of the picked sequences back to their places in `out`. */
export function scatterSequences(
  rows: Float32Array,
  out: Float32Array,
  chunk: Chunk,
  width: number,
  gemm: boolean,
): void {
  const block = chunk.T * width;
  chunk.gemm
    .flatMap((g, b) => (g === gemm ? [b] : []))
    .forEach((b, i) => out.set(rows.subarray(i * block, (i + 1) * block), b * block));
}

/** The rows of the last time of each sequence in a [B·T, H] block. */
export function lastRows(block: Float32Array, B: number, T: number, H: number): Float32Array {
  const out = new Float32Array(B * H);
  for (let b = 0; b < B; b++) out.set(block.subarray(((b + 1) * T - 1) * H, (b + 1) * T * H), b * H);
  return out;
}
