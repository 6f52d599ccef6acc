// Starts an evaluation process only when the machine has the memory it will need. At the 4B shape the service and
// two evaluation processes do not fit 24 GiB together, and the kernel's OOM killer would take the largest process:
// the service. Each process's need is reserved from its start until it has grown into it (its resident memory) or
// ended, so two evaluations never both count the same free memory.
//
// The reservations are the machine's, not one runner's: two `run-prime`s (or a pilot and a replay) share one
// machine's memory. They live in one file, `reservations.json` in the gate folder (os.tmpdir()/iwibench-memory-gate,
// shared by every run and user of the machine), read and rewritten only under the folder's lock file. Each records
// the runner that made it and, once spawned, the evaluation process; it is dropped once both have gone, so a killed
// runner's reservation lasts as long as the evaluation it left running, and no longer.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { removeAtomicLeftovers, writeJsonAtomic } from '../core/files.ts';
import { isRunning, processIdentity, withFileLock, type ProcessIdentity } from './file-lock.ts';

export const MEMORY_GATE_FORMAT = 'iwibench-memory-gate/1';

/** One evaluation's claim: `bytes` its process will hold at most, of which its resident memory is already taken. */
export type MemoryReservation = {
  id: string;
  what: string;
  bytes: number;
  runner: ProcessIdentity;
  process: ProcessIdentity | null;
};

export type MemoryGateOptions = {
  /** The gate folder; the machine's by default (tests use their own). */
  dir?: string;
  /** Memory the machine can give now; MemAvailable by default (tests give a fixed figure). */
  available?: () => number;
  /** How often a waiting reservation looks again, and a granted one looks for its process's pid. */
  pollMs?: number;
};

export const DEFAULT_GATE_DIR = path.join(os.tmpdir(), 'iwibench-memory-gate');

/** Memory the kernel can give without swapping (MemAvailable), or free memory where /proc is absent. */
export function availableBytes(): number {
  try {
    const match = /^MemAvailable:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    if (match) return Number(match[1]) * 1024;
  } catch {
    // not Linux
  }
  return os.freemem();
}

function residentBytes(identity: ProcessIdentity | null): number {
  if (identity === null || !isRunning(identity)) return 0;
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${identity.pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Reserved memory that started processes have not taken yet. */
function outstandingBytes(reservations: MemoryReservation[]): number {
  let total = 0;
  for (const r of reservations) total += Math.max(0, r.bytes - residentBytes(r.process));
  return total;
}

const isLive = (r: MemoryReservation) => isRunning(r.runner) || (r.process !== null && isRunning(r.process));

function readReservations(file: string): MemoryReservation[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  let parsed: { format?: unknown; reservations?: MemoryReservation[] } | undefined;
  try {
    parsed = JSON.parse(text);
  } catch {
    // reported below
  }
  if (parsed?.format !== MEMORY_GATE_FORMAT || !Array.isArray(parsed.reservations)) {
    throw new Error(`${file} is not a ${MEMORY_GATE_FORMAT} file (remove it when no iwibench evaluation runs)`);
  }
  return parsed.reservations;
}

/** The live reservations of the gate folder `dir`, given to `fn` to read or change, under the folder's lock. */
export function withReservations<T>(dir: string, fn: (reservations: MemoryReservation[]) => T): T {
  if (mkdirSync(dir, { recursive: true }) !== undefined) chmodSync(dir, 0o777); // every user's runs share it
  const file = path.join(dir, 'reservations.json');
  return withFileLock(path.join(dir, 'lock'), () => {
    removeAtomicLeftovers(dir);
    const stored = readReservations(file);
    const reservations = stored.filter(isLive);
    const before = JSON.stringify(stored);
    const result = fn(reservations);
    if (JSON.stringify(reservations) !== before)
      writeJsonAtomic(file, { format: MEMORY_GATE_FORMAT, reservations }, false);
    return result;
  });
}

const GiB = 2 ** 30;
const gib = (bytes: number) => `${(bytes / GiB).toFixed(1)} GiB`;

/**
 * Wait until `bytes` are available beyond what running evaluations on this machine still need, then reserve them;
 * `pid` gives the evaluation process's pid once it is spawned. The returned function releases the reservation (call
 * it when the process ends). Says once on stderr that it waits, and why.
 */
export async function reserveMemory(
  bytes: number,
  pid: () => number | undefined,
  what: string,
  options: MemoryGateOptions = {},
): Promise<() => void> {
  const { dir = DEFAULT_GATE_DIR, available = availableBytes, pollMs = 2000 } = options;
  const reservation: MemoryReservation = {
    id: randomBytes(8).toString('hex'),
    what,
    bytes,
    runner: processIdentity(process.pid),
    process: null,
  };
  let told = false;
  for (;;) {
    const { granted, free, others } = withReservations(dir, (reservations) => {
      const free = available() - outstandingBytes(reservations);
      // With nothing else reserved, waiting cannot help: it starts (and says what it lacks, below).
      const granted = free >= bytes || reservations.length === 0;
      const others = reservations.map((r) => r.process?.pid ?? r.runner.pid);
      if (granted) reservations.push(reservation);
      return { granted, free, others };
    });
    if (granted) {
      if (free < bytes)
        process.stderr.write(`${what}: needs ~${gib(bytes)}, ${gib(free)} available; starting anyway\n`);
      break;
    }
    if (!told) {
      const holders = `${others.length} evaluation${others.length === 1 ? '' : 's'} on this machine (pid ${others.join(', ')})`;
      process.stderr.write(
        `${what}: waiting for memory (needs ~${gib(bytes)}, ${gib(free)} available beyond ${holders})\n`,
      );
    }
    told = true;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }

  const update = (change: (reservations: MemoryReservation[]) => void) => {
    try {
      withReservations(dir, change);
    } catch (error) {
      process.stderr.write(`${what}: memory gate ${dir}: ${(error as Error).message}\n`);
    }
  };
  // Record the evaluation process once it is spawned: its resident memory is what it has taken of its reservation,
  // and the reservation outlives this runner while it runs.
  let timer: NodeJS.Timeout | undefined;
  const recordProcess = () => {
    const child = pid();
    if (child === undefined) {
      timer = setTimeout(recordProcess, pollMs).unref();
      return;
    }
    const identity = processIdentity(child);
    update((reservations) => {
      const mine = reservations.find((r) => r.id === reservation.id);
      if (mine) mine.process = identity;
    });
  };
  timer = setTimeout(recordProcess, 0).unref();
  let released = false;
  return () => {
    if (released) return;
    released = true;
    clearTimeout(timer);
    update((reservations) => {
      const index = reservations.findIndex((r) => r.id === reservation.id);
      if (index >= 0) reservations.splice(index, 1);
    });
  };
}
