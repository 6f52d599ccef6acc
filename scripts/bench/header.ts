// What every benchmark's JSON starts with: which benchmark, the versions it ran on and the arguments it ran with.
import * as ort from 'onnxruntime-node';
import { PACKAGE_VERSION } from '../../core/version.ts';

export function benchHeader(bench: string, args: Record<string, unknown>) {
  return { bench, version: PACKAGE_VERSION, node: process.version, onnxruntime: ort.env.versions.node, args };
}
