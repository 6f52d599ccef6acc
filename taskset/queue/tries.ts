// A try's temp folder: `<attempt folder>.partial-<host>-<pid>-<tag>`, the host being the hostname and boot id (a pid
// means nothing on another machine, nor across a reboot) and the tag a hash of the try's job lock token. A worker
// clears the dead tries of its own host, and any try whose job no longer holds a lock in Redis; a try on another
// machine whose job is still locked may be alive and is left alone.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { processExists } from '../../core/process.ts';
import { clearInterrupted, completedAttempt, type AttemptStatus } from '../attempt.ts';

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().replace(/-/g, '').slice(0, 8);
  } catch {
    return 'noboot';
  }
}

/** This machine as a try's folder names it: hostname (dots and dashes kept) and boot id. */
export const HOST = `${os.hostname().replace(/[^A-Za-z0-9.-]+/g, '_')}.${bootId()}`;

/** What the committed folder records of the try that wrote it (queue-try.json): the job's settings hash above all. */
export const TRY_RECORD = 'queue-try.json';
export type TryRecord = { id: string; hash: string; host: string; pid: number; started_at: string };

export const tokenTag = (token: string) => createHash('sha256').update(token).digest('hex').slice(0, 8);

export const tryFolder = (dir: string, token: string) =>
  `${path.resolve(dir)}.partial-${HOST}-${process.pid}-${tokenTag(token)}`;

const TRY_NAME = /^(.+)\.partial-(.+)-(\d+)-([0-9a-f]{8})$/;
export function parseTry(name: string): { id: string; host: string; pid: number; tag: string } | undefined {
  const m = TRY_NAME.exec(name);
  return m ? { id: m[1]!, host: m[2]!, pid: Number(m[3]), tag: m[4]! } : undefined;
}

/** The attempt's folder when it is complete and was written for these settings (its recorded hash); else nothing. */
export function finishedAttempt(dir: string, hash: string): AttemptStatus | undefined {
  const status = completedAttempt(dir);
  const record = path.join(dir, TRY_RECORD);
  if (!status || !existsSync(record)) return undefined;
  return (JSON.parse(readFileSync(record, 'utf8')) as TryRecord).hash === hash ? status : undefined;
}

const ownDead = (t: { host: string; pid: number }) => t.host === HOST && t.pid !== process.pid && !processExists(t.pid);

/** The tries of one attempt that died on this machine: cleared once the evaluation processes they started end. */
export async function clearDeadTries(dir: string): Promise<void> {
  const parent = path.dirname(path.resolve(dir));
  if (!existsSync(parent)) return;
  for (const name of readdirSync(parent)) {
    const t = parseTry(name);
    if (t && t.id === path.basename(dir) && ownDead(t)) await clearInterrupted(path.join(parent, name));
  }
}

/**
 * Every try folder under `attemptsDir` that can no longer commit and will not be cleared by its own worker: a dead
 * one of this host, or one whose job holds no lock (`live` asks Redis; a job another queue holds counts as live).
 * Another host's try is only removed (its evaluation processes, if any, are that host's); this host's waits for its
 * evaluation processes first.
 */
export async function sweepTries(attemptsDir: string, live: (id: string) => Promise<boolean>): Promise<string[]> {
  if (!existsSync(attemptsDir)) return [];
  const cleared: string[] = [];
  for (const name of readdirSync(attemptsDir)) {
    const t = parseTry(name);
    if (!t) continue;
    const own = t.host === HOST;
    if (!(own && ownDead(t)) && (await live(t.id))) continue;
    const folder = path.join(attemptsDir, name);
    if (own) await clearInterrupted(folder);
    else rmSync(folder, { recursive: true, force: true });
    cleared.push(name);
  }
  return cleared;
}
