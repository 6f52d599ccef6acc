// A lock between the processes of one machine: a file created atomically with its owner inside (`link` of a
// written temp file, so it is never seen empty). Node has no flock, so a lock whose owner has died is reclaimed:
// the reclaimer first takes the lock `<lock>.reclaim-<token>` (the same protocol, one level up), and only the one
// that holds it may remove the dead owner's lock. A lock is held for a few file operations, never across a wait.
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { processExists } from '../core/process.ts';

/** A process, told apart from a later one that reuses its pid by its start time (Linux; null elsewhere). */
export type ProcessIdentity = { pid: number; start: string | null };

function startTime(pid: number): string | null {
  try {
    // Field 22 of /proc/<pid>/stat, counted after the command name (which may hold spaces and parentheses).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

export function processIdentity(pid: number): ProcessIdentity {
  return { pid, start: startTime(pid) };
}

/** Whether the process still runs (and is the same process: its start time, where known, is unchanged). */
export function isRunning(identity: ProcessIdentity): boolean {
  return processExists(identity.pid) && (identity.start === null || startTime(identity.pid) === identity.start);
}

type LockOwner = ProcessIdentity & { token: string };

const sleeper = new Int32Array(new SharedArrayBuffer(4));
const sleep = (ms: number) => Atomics.wait(sleeper, 0, 0, ms);

function readOwner(lock: string): LockOwner | undefined {
  let text: string;
  try {
    text = readFileSync(lock, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return JSON.parse(text) as LockOwner;
  } catch {
    throw new Error(`${lock} is not a lock file of this program (remove it if no iwibench process runs)`);
  }
}

/** Take the lock once: true if this process now holds it (as `owner`), false if a live process does. */
function tryLock(lock: string, owner: LockOwner): boolean {
  const temp = `${lock}.tmp-${owner.pid}-${Date.now()}`; // removeAtomicLeftovers' pattern: a dead writer's is removed
  writeFileSync(temp, JSON.stringify(owner), { mode: 0o666 });
  try {
    linkSync(temp, lock);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(temp, { force: true });
  }
  const held = readOwner(lock);
  if (held === undefined) return tryLock(lock, owner); // released between the two calls
  if (isRunning(held)) return false;
  // Its owner died holding it. Only one process may remove it: the one that holds the reclaim lock of this token
  // (a later lock carries another token, so a slow reclaimer can never remove it).
  const reclaim = `${lock}.reclaim-${held.token}`;
  const reclaimer = { ...owner, token: randomBytes(8).toString('hex') };
  if (!tryLock(reclaim, reclaimer)) return false;
  try {
    if (readOwner(lock)?.token === held.token) rmSync(lock, { force: true });
  } finally {
    rmSync(reclaim, { force: true });
  }
  return tryLock(lock, owner);
}

/**
 * Run `fn` holding the lock file `lock` (its folder must exist), waiting for a live holder to let go. The wait
 * blocks the thread, so it is bounded: a holder that keeps the lock past `maxWaitMs` is stuck (or stopped), an error.
 */
export function withFileLock<T>(lock: string, fn: () => T, maxWaitMs = 30_000): T {
  const owner: LockOwner = { ...processIdentity(process.pid), token: randomBytes(8).toString('hex') };
  const start = Date.now();
  for (let attempt = 0; !tryLock(lock, owner); attempt++) {
    if (Date.now() - start > maxWaitMs) {
      throw new Error(
        `${lock} has been held by pid ${readOwner(lock)?.pid ?? '?'} for over ${maxWaitMs / 1000} s; remove it if that process is stuck`,
      );
    }
    sleep(Math.min(1 + attempt, 20));
  }
  try {
    return fn();
  } finally {
    if (readOwner(lock)?.token === owner.token) rmSync(lock, { force: true });
  }
}
