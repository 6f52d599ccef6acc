// The name of the arithmetic that computed a result: one name per precision on the CPU, whatever the machine, its
// instruction sets or the engine's threads (every kernel path gives the same bits: docs/engine.md, "One
// arithmetic"); a device's onnxruntime provider computes in its own order, so its name says which provider and which
// onnxruntime. Results, caches and queue ids carry it, and nothing compares evaluations of two names.
import { createRequire } from 'node:module';
import type { Device } from './device.ts';
import type { Precision } from './settings.ts';

/** The CPU's arithmetic of each precision: a new version whenever any op's bits change. */
export const CPU_ARITHMETIC: Readonly<Record<Precision, string>> = { bf16: 'bf16/3', float32: 'float32/2' };

const ONNXRUNTIME_VERSION = (createRequire(import.meta.url)('onnxruntime-node/package.json') as { version: string })
  .version;

/** The arithmetic of an engine of this precision on this device. */
export function arithmeticName(precision: Precision, device: Device): string {
  const cpu = CPU_ARITHMETIC[precision];
  return device === 'cpu' ? cpu : `${cpu}+${device}/onnxruntime-${ONNXRUNTIME_VERSION}`;
}
