// The machine as the engine sees it: the CPU and the instruction sets its kernels choose between, the memory a run
// may take (MemAvailable, and a container's cgroup limit), the free disk under a folder.
import { existsSync, readFileSync, statfsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The CPU flags (as /proc/cpuinfo names them) that decide the kernels' paths: vector width, BF16, the tile unit. */
export const CPU_FLAGS = [
  'avx2',
  'fma',
  'f16c',
  'avx512f',
  'avx512bw',
  'avx512vl',
  'avx512_bf16',
  'avx512_fp16',
  'avx_vnni',
  'amx_tile',
  'amx_bf16',
] as const;

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

export function cpu() {
  const flags = new Set(/^flags\s*:\s*(.*)$/m.exec(read('/proc/cpuinfo') ?? '')?.[1]?.split(/\s+/) ?? []);
  return {
    model: os.cpus()[0]?.model ?? null,
    logical_cpus: os.cpus().length,
    available_parallelism: os.availableParallelism(),
    // Of CPU_FLAGS: the ones this CPU has and the ones it lacks (empty lists where /proc/cpuinfo is not: not Linux).
    instruction_sets: CPU_FLAGS.filter((f) => flags.has(f)),
    lacks: flags.size > 0 ? CPU_FLAGS.filter((f) => !flags.has(f)) : [],
  };
}

/** A /proc/meminfo field in bytes. */
function meminfo(field: string): number | null {
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(read('/proc/meminfo') ?? '')?.[1];
  return kb === undefined ? null : Number(kb) * 1024;
}

/** A container's memory limit (cgroup v2, else v1); null where none is set. */
function cgroupLimit(): number | null {
  const text = (read('/sys/fs/cgroup/memory.max') ?? read('/sys/fs/cgroup/memory/memory.limit_in_bytes'))?.trim();
  const bytes = Number(text);
  return text && text !== 'max' && Number.isFinite(bytes) && bytes < os.totalmem() ? bytes : null;
}

export function memory() {
  return {
    total: meminfo('MemTotal') ?? os.totalmem(),
    available: meminfo('MemAvailable') ?? os.freemem(),
    cgroup_limit: cgroupLimit(),
  };
}

/** Free bytes on the disk that holds `dir` (or its nearest existing parent: a cache not made yet). */
export function freeDisk(dir: string): { path: string; free: number } {
  let at = path.resolve(dir);
  while (!existsSync(at)) at = path.dirname(at);
  const { bavail, bsize } = statfsSync(at);
  return { path: at, free: bavail * bsize };
}
