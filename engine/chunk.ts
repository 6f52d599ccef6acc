// One chunk of a left-padded batch, as the forward pass takes it, and the last row of each sequence.
import { PAD_ID } from './tokenizer.ts';

/**
 * T padded times from `start` of a left-padded batch of B sequences: ids [B·T] (PAD_ID in padding) and positions
 * (−1 in padding).
 */
export type Chunk = { ids: Int32Array; positions: Int32Array; start: number; T: number };

/** T padded times from `start` of a left-padded batch: ids (PAD_ID in padding) and positions (−1 in padding). */
export function paddedChunk(prompts: number[][], pads: number[], start: number, T: number): Chunk {
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
  return { ids, positions, start, T };
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

/** The rows of the last time of each sequence in a [B·T, H] block. */
export function lastRows(block: Float32Array, B: number, T: number, H: number): Float32Array {
  const out = new Float32Array(B * H);
  for (let b = 0; b < B; b++) out.set(block.subarray(((b + 1) * T - 1) * H, (b + 1) * T * H), b * H);
  return out;
}
