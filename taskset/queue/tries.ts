// A try's temp folder: `<attempt folder>.partial-<host>-<pid>-<tag>`, the host being the hostname, the boot id and
// the PID namespace (a pid means nothing on another machine, across a reboot, or in another container that shares
// the hostname) and the tag a hash of the try's job lock token. A worker clears the dead tries of its own host, and
// any try whose job no longer holds a lock in Redis, or whose job its own queue no longer has (`pilot clean` removed
// it); a try on another machine whose job is still locked may be alive and is left alone.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { processExists } from '../../core/process.ts';
import { completedAttempt, endEvaluations, type AttemptStatus } from '../attempt-folder.ts';

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().replace(/-/g, '').slice(0, 8);
  } catch {
    return 'noboot';
  }
}

/** The PID namespace's inode (`pid:[4026531836]`): containers on one kernel with one hostname differ in it. */
function pidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? 'nons';
  } catch {
    return 'nons';
  }
}

/** This machine as a try's folder names it: hostname (dots and dashes kept), boot id and PID namespace. */
export const HOST = `${os.hostname().replace(/[^A-Za-z0-9.-]+/g, '_')}.${bootId()}.${pidNamespace()}`;

/**
 * What a try folder records of its try (queue-try.json, written first; kept in the committed folder): the job's
 * settings hash above all, and the queue and lane it came from (absent in tries of before lanes).
 */
export const TRY_RECORD = 'queue-try.json';
export type TryRecord = {
  id: string;
  hash: string;
  host: string;
  pid: number;
  started_at: string;
  /** lanes.ts: the queue's id and the lane the job was on. */
  queue?: string;
  lane?: string;
};

export const tokenTag = (token: string) => createHash('sha256').update(token).digest('hex').slice(0, 8);

/** The try folder of a try (this process's, or another's as its commit claim names it). */
export const tryFolder = (dir: string, token: string, host = HOST, pid = process.pid) =>
  `${path.resolve(dir)}.partial-${host}-${pid}-${tokenTag(token)}`;

export type TryName = { id: string; host: string; pid: number; tag: string };
const TRY_NAME = /^(.+)\.partial-(.+)-(\d+)-([0-9a-f]{8})$/;
export function parseTry(name: string): TryName | undefined {
  const m = TRY_NAME.exec(name);
  return m ? { id: m[1]!, host: m[2]!, pid: Number(m[3]), tag: m[4]! } : undefined;
}

/** A try folder's record, if it has a readable one yet. */
export function tryRecord(folder: string): TryRecord | undefined {
  try {
    return JSON.parse(readFileSync(path.join(folder, TRY_RECORD), 'utf8')) as TryRecord;
  } catch {
    return undefined;
  }
}

/** The attempt's folder when it is complete and was written for these settings (its recorded hash); else nothing. */
export function finishedAttempt(dir: string, hash: string): AttemptStatus | undefined {
  const status = completedAttempt(dir);
  if (!status) return undefined;
  return tryRecord(dir)?.hash === hash ? status : undefined;
}

const ownDead = (t: { host: string; pid: number }) => t.host === HOST && t.pid !== process.pid && !processExists(t.pid);

/**
 * A try folder removed. A dead try of this host: its evaluation processes ended first, then the folder. Any other (a
 * try that may be alive, cut off between its commit claim and its rename): first renamed to a try name of this
 * process's, atomically, so that it can never be renamed into place half removed (should this process die meanwhile,
 * the name is a dead try of this host's, swept later); then ended and removed the same way. False: it was not there.
 */
export async function removeTry(folder: string, dead: boolean, signal?: AbortSignal): Promise<boolean> {
  const t = parseTry(path.basename(folder))!;
  let doomed = folder;
  if (!dead) {
    doomed = tryFolder(path.join(path.dirname(folder), t.id), randomBytes(8).toString('hex'));
    try {
      renameSync(folder, doomed);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false; // cleared meanwhile
      throw error;
    }
  } else if (!existsSync(folder)) return false;
  if (t.host === HOST) await endEvaluations(doomed, signal);
  rmSync(doomed, { recursive: true, force: true });
  return true;
}

/** The tries of one attempt that died on this machine: cleared, their evaluation processes ended first. */
export async function clearDeadTries(dir: string, signal?: AbortSignal): Promise<void> {
  const parent = path.dirname(path.resolve(dir));
  if (!existsSync(parent)) return;
  for (const name of readdirSync(parent)) {
    const t = parseTry(name);
    if (t && t.id === path.basename(dir) && ownDead(t)) await removeTry(path.join(parent, name), true, signal);
  }
}

/**
 * Every try folder under `attemptsDir` that can no longer commit and will not be cleared by its own worker: a dead
 * one of this host, or one that `live` (asking Redis) says cannot commit. Another host's try is only removed (its
 * evaluation processes, if any, are that host's); this host's has its evaluation processes ended first.
 */
export async function sweepTries(
  attemptsDir: string,
  live: (t: TryName, record: TryRecord | undefined) => Promise<boolean>,
  signal?: AbortSignal,
): Promise<string[]> {
  if (!existsSync(attemptsDir)) return [];
  const cleared: string[] = [];
  for (const name of readdirSync(attemptsDir)) {
    signal?.throwIfAborted();
    const t = parseTry(name);
    if (!t) continue;
    const folder = path.join(attemptsDir, name);
    const own = t.host === HOST;
    if (own && t.pid === process.pid) continue; // this process's own: its worker clears them
    const dead = own && ownDead(t);
    if (!dead && (await live(t, tryRecord(folder)))) continue;
    await removeTry(folder, dead, signal);
    cleared.push(name);
  }
  return cleared;
}
