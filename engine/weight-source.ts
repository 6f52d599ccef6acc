// Where the engine's weights come from: BF16 bits, exactly the checkpoint's values (or an episode's edits, rounded to
// BF16 when written). Every process holds weights this way, 2 bytes per parameter; float32 exists only in transient
// tiles inside the engine.
import { runSteps, type Steps } from '../core/steps.ts';
import type { Checkpoint } from './checkpoint.ts';
import { adviseHugePages } from './kernels.ts';

/** BF16 bits of a text tensor by canonical checkpoint name: row-major, as in the safetensors file. Never write into it. */
export type WeightSource = {
  bf16(name: string): Uint16Array;
  /**
   * True where bf16(name) cannot change while the engine lives (the service's pristine weights), so that a device may
   * keep its copy across calls (device.ts). Absent or false: only the engine's own source is taken as such.
   */
  stable?(name: string): boolean;
};

/**
 * BF16 storage for `length` values in shared memory, so that the service's engine worker (engine-host.ts) reads the
 * store's arrays in place, on huge pages where the OS gives them (kernels.ts). Every tensor the engine may be given is
 * allocated here.
 */
export function allocateBf16(length: number): Uint16Array {
  const bits = new Uint16Array(new SharedArrayBuffer(2 * length));
  adviseHugePages(bits);
  return bits;
}

/** A shared copy of BF16 bits (an episode's copy on write), at once. */
export function copyBf16(bits: Uint16Array): Uint16Array {
  return runSteps(copyBf16Steps(bits));
}

/** Values a step of copyBf16Steps copies: 16 MiB, ~10 ms into touched memory, ~35 where the VM touches it first. */
const COPY_STEP = 8 << 20;

/** copyBf16 as steps (core/steps.ts), yielding after each 16 MiB: the service copies the 1B embedding (604 MB) so. */
export function* copyBf16Steps(bits: Uint16Array): Steps<Uint16Array> {
  const copy = allocateBf16(bits.length);
  for (let at = 0; at < bits.length; at += COPY_STEP) {
    if (at > 0) yield;
    copy.set(bits.subarray(at, at + COPY_STEP), at);
  }
  return copy;
}

/** A tensor's BF16 bits as stored, in shared memory; only BF16 checkpoints are served (every pinned target and our fixtures are). */
export function readBf16(checkpoint: Checkpoint, name: string): Uint16Array {
  const info = checkpoint.info(name);
  if (info.dtype !== 'BF16')
    throw new Error(
      `tensor "${name}" is ${info.dtype}; the engine holds weights as BF16, as the pinned checkpoints store them`,
    );
  const bits = allocateBf16(info.byteLength / 2);
  checkpoint.readBytes(name, new Uint8Array(bits.buffer));
  return bits;
}

/** Read each tensor from the checkpoint once, on first use, and keep its BF16 bits. */
export function checkpointSource(checkpoint: Checkpoint): WeightSource {
  const cache = new Map<string, Uint16Array>();
  return {
    bf16(name) {
      let bits = cache.get(name);
      if (!bits) {
        bits = readBf16(checkpoint, name);
        cache.set(name, bits);
      }
      return bits;
    },
  };
}

/** A source that serves `overrides` (e.g. a patch's touched tensors) and `base` for everything else. */
export function overlaySource(base: WeightSource, overrides: ReadonlyMap<string, Uint16Array>): WeightSource {
  return { bf16: (name) => overrides.get(name) ?? base.bf16(name) };
}
