// Evaluation processes start only when the memory they need is available beyond what started ones still need, on
// the whole machine: reservations of other runner processes count, a killed runner's are reclaimed, and concurrent
// updates of the gate file lose nothing. Processes are told apart by pid and start time here, in the file lock and
// when a resumed run waits for the evaluation processes an interrupted attempt left.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { clearInterrupted } from '../../taskset/attempt.ts';
import { isRunning, processIdentity, withFileLock } from '../../taskset/file-lock.ts';
import { MEMORY_GATE_FORMAT, availableBytes, reserveMemory, withReservations } from '../../taskset/memory-gate.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHILD = fileURLToPath(new URL('./memory-gate-child.ts', import.meta.url));
const GiB = 2 ** 30;

let dir: string;
const started: ChildProcess[] = [];
const spawnedPids: number[] = [];

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'iwibench-gate-test-'));
});

afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
  for (const pid of spawnedPids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

/** Every line the runner processes of one test wrote, in the order this process received them. */
type Event = { runner: string; stream: 'out' | 'err'; line: string };

/** A runner process (memory-gate-child.ts) against the test's gate folder, with a fixed "available memory". */
class Runner {
  private readonly child: ChildProcess;
  private readonly waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];

  constructor(
    readonly name: string,
    available: number,
    private readonly events: Event[],
  ) {
    this.child = spawn(process.execPath, ['--import', 'tsx', CHILD, dir, String(available)], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    started.push(this.child);
    for (const stream of ['out', 'err'] as const) {
      let pending = '';
      (stream === 'out' ? this.child.stdout! : this.child.stderr!).on('data', (chunk: Buffer) => {
        pending += chunk.toString();
        for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
          this.received(stream, pending.slice(0, end));
          pending = pending.slice(end + 1);
        }
      });
    }
  }

  /** Resolves once the process reads its commands. */
  readonly ready = this.next(/^ready$/);

  get pid(): number {
    return this.child.pid!;
  }

  private received(stream: Event['stream'], line: string): void {
    this.events.push({ runner: this.name, stream, line });
    for (const waiter of this.waiters.filter((w) => w.pattern.test(line))) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve(line);
    }
  }

  /** Send one command (an event of the test's own); resolves with the first later line that matches `until`. */
  send(command: string, until: RegExp): Promise<string> {
    const line = this.next(until);
    this.events.push({ runner: 'test', stream: 'out', line: `${this.name} ${command}` });
    this.child.stdin!.write(`${command}\n`);
    return line;
  }

  /** The first later line (stdout or stderr) that matches `pattern`. */
  next(pattern: RegExp): Promise<string> {
    return new Promise<string>((resolve) => this.waiters.push({ pattern, resolve }));
  }

  kill(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill('SIGKILL');
    return exited;
  }
}

const stored = () =>
  JSON.parse(readFileSync(path.join(dir, 'reservations.json'), 'utf8')) as {
    format: string;
    reservations: { what: string; runner: { pid: number }; process: { pid: number } | null }[];
  };
const lines = (events: Event[]) =>
  events.filter((e) => e.line !== 'ready').map((e) => `${e.runner} ${e.stream} ${e.line}`);
/** Enough of the waiting runner's 10 ms polls for a wrong grant to have happened (no assertion on time). */
const severalPolls = () => new Promise((resolve) => setTimeout(resolve, 300));

describe('memory gate across processes', () => {
  it("a second runner waits for the first one's reservation, says so once, and starts when it is released", async () => {
    const events: Event[] = [];
    const first = new Runner('first', 10 * GiB, events);
    const second = new Runner('second', 10 * GiB, events);
    await first.send(`reserve a ${6 * GiB}`, /^reserved a$/);
    await second.send(`reserve b ${6 * GiB}`, /waiting for memory/);
    await severalPolls();
    expect(stored().reservations.map((r) => [r.what, r.runner.pid])).toEqual([['a', first.pid]]);
    const granted = second.next(/^reserved b$/);
    await first.send('release a', /^released a$/);
    await granted;
    expect(lines(events).slice(0, 5)).toEqual([
      `test out first reserve a ${6 * GiB}`,
      'first out reserved a',
      `test out second reserve b ${6 * GiB}`,
      `second err b: waiting for memory (needs ~6.0 GiB, 4.0 GiB available beyond 1 evaluation on this machine (pid ${first.pid}))`,
      'test out first release a',
    ]);
    // The grant follows the release (the two runners' lines may reach this process in either order).
    expect(lines(events).slice(5).sort()).toEqual(['first out released a', 'second out reserved b']);
    expect(stored().reservations.map((r) => [r.what, r.runner.pid])).toEqual([['b', second.pid]]);
  });

  it("drops a killed runner's reservation once the evaluation process it left running has ended too", async () => {
    const events: Event[] = [];
    const killed = new Runner('killed', 10 * GiB, events);
    const waiting = new Runner('waiting', 10 * GiB, events);
    const spawnedLine = await killed.send(`spawn a ${6 * GiB}`, /^spawned a \d+$/);
    const evaluationPid = Number(spawnedLine.split(' ')[2]);
    spawnedPids.push(evaluationPid);
    // The runner records its evaluation process in the reservation (a resident node of a few tens of MB).
    await vi.waitFor(() => expect(stored().reservations[0].process?.pid).toBe(evaluationPid), {
      timeout: 30_000,
      interval: 20,
    });
    await waiting.send(`reserve b ${6 * GiB}`, /waiting for memory/);
    await killed.kill();
    await severalPolls();
    expect(lines(events)).not.toContain('waiting out reserved b'); // the evaluation process still holds its memory
    expect(stored().reservations.map((r) => r.what)).toEqual(['a']);
    const granted = waiting.next(/^reserved b$/);
    process.kill(evaluationPid, 'SIGKILL');
    await granted;
    expect(stored().reservations.map((r) => [r.what, r.runner.pid])).toEqual([['b', waiting.pid]]);
  });

  it('loses no reservation when four runners reserve and release at once', async () => {
    const events: Event[] = [];
    const runners = ['p', 'q', 'r', 's'].map((name) => new Runner(name, 1000 * GiB, events));
    await Promise.all(
      runners.map((runner) => runner.send(`many ${runner.name} 40 ${GiB}`, new RegExp(`^many ${runner.name}$`))),
    );
    const kept = stored()
      .reservations.map((r) => r.what)
      .sort();
    const expected = runners.flatMap((runner) => Array.from({ length: 20 }, (_, k) => `${runner.name}${2 * k}`)).sort();
    expect(kept).toEqual(expected);
    expect(stored().format).toBe(MEMORY_GATE_FORMAT);
    expect(readdirSync(dir).sort()).toEqual(['reservations.json']); // no lock or temp file left behind
  }, 60_000);
});

describe('memory gate in one process', () => {
  it('waits while an earlier reservation holds the memory; starts anyway, saying so, with nothing to wait for', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const options = { dir, available: () => 10 * GiB, pollMs: 10 };
      const releaseFirst = await reserveMemory(5 * GiB, () => undefined, 'first', options);
      let secondStarted = false;
      const second = reserveMemory(7.5 * GiB, () => undefined, 'second', options).then(
        (release) => ((secondStarted = true), release),
      );
      await vi.waitFor(() =>
        expect(stderr.mock.calls.map(([text]) => String(text)).join('')).toMatch(
          /second: waiting for memory \(needs ~7\.5 GiB, 5\.0 GiB/,
        ),
      );
      expect(secondStarted).toBe(false);
      releaseFirst();
      releaseFirst(); // twice is once
      (await second)();
      expect(secondStarted).toBe(true);
      (await reserveMemory(40 * GiB, () => undefined, 'huge', options))();
      expect(stderr.mock.calls.map(([text]) => String(text)).join('')).toMatch(
        /huge: needs ~40\.0 GiB, 10\.0 GiB available; starting anyway/,
      );
      expect(stored().reservations).toEqual([]);
      expect(availableBytes()).toBeGreaterThan(0);
    } finally {
      stderr.mockRestore();
    }
  });

  it('counts what a spawned process has already taken as resident, not as outstanding', async () => {
    // This test process is resident by some tens of MB: a reservation of 1 GiB for it leaves ~that much outstanding.
    const release = await reserveMemory(GiB, () => process.pid, 'self', { dir, available: () => 2 * GiB, pollMs: 10 });
    await vi.waitFor(() => expect(stored().reservations[0].process?.pid).toBe(process.pid));
    const resident = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;
    // 1 GiB + half the resident memory fits only if the resident part is not counted as outstanding.
    const second = await reserveMemory(GiB + resident / 2, () => undefined, 'second', {
      dir,
      available: () => 2 * GiB,
      pollMs: 10,
    });
    expect(stored().reservations.map((r) => r.what)).toEqual(['self', 'second']);
    second();
    release();
  });

  it('refuses a gate file of another format, naming it, and changes nothing', () => {
    const file = path.join(dir, 'reservations.json');
    writeFileSync(file, '{"format":"other"}');
    expect(() => withReservations(dir, () => 0)).toThrow(`${file} is not a ${MEMORY_GATE_FORMAT} file`);
    expect(readFileSync(file, 'utf8')).toBe('{"format":"other"}');
    expect(existsSync(path.join(dir, 'lock'))).toBe(false);
  });
});

describe('file lock', () => {
  it("waits while the lock's owner runs, and takes it once the owner is killed", async () => {
    const events: Event[] = [];
    const owner = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    spawnedPids.push(owner.pid!);
    writeFileSync(path.join(dir, 'lock'), JSON.stringify({ ...processIdentity(owner.pid!), token: 'live' }));
    const runner = new Runner('runner', 10 * GiB, events);
    await runner.ready;
    const granted = runner.send(`reserve a ${GiB}`, /^reserved a$/);
    await severalPolls();
    expect(lines(events)).toEqual([`test out runner reserve a ${GiB}`]); // it has not got the lock
    owner.kill('SIGKILL');
    await granted;
    expect(stored().reservations.map((r) => r.what)).toEqual(['a']);
  });

  it('gives up on a live owner that keeps the lock, naming it, and runs nothing', () => {
    const lock = path.join(dir, 'lock');
    const owner = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    spawnedPids.push(owner.pid!);
    writeFileSync(lock, JSON.stringify({ ...processIdentity(owner.pid!), token: 'stuck' }));
    let ran = false;
    expect(() => withFileLock(lock, () => (ran = true), 50)).toThrow(
      `${lock} has been held by pid ${owner.pid} for over 0.05 s`,
    );
    expect(ran).toBe(false);
    expect(JSON.parse(readFileSync(lock, 'utf8')).token).toBe('stuck');
  });

  it('reclaims a lock whose owner has died or whose pid now belongs to another process', async () => {
    const lock = path.join(dir, 'lock');
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => dead.once('exit', resolve));
    const deadOwner = { ...processIdentity(dead.pid!), token: 'dead' };
    expect(isRunning(deadOwner)).toBe(false);
    writeFileSync(lock, JSON.stringify(deadOwner));
    expect(withFileLock(lock, () => JSON.parse(readFileSync(lock, 'utf8')).pid)).toBe(process.pid);
    expect(readdirSync(dir)).toEqual([]);
    // A lock whose pid runs but started at another time was a process that is gone (its pid reused).
    writeFileSync(lock, JSON.stringify({ pid: process.pid, start: '1', token: 'reused' }));
    expect(withFileLock(lock, () => 'taken')).toBe('taken');
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('resuming an interrupted attempt', () => {
  it('waits for the evaluation process it left (pid and start time), not for an unrelated process that reuses its pid', async () => {
    const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)']);
    started.push(other);
    const attempt = path.join(dir, 'attempt');
    mkdirSync(attempt);
    // The evaluation process that had this pid is gone; an unrelated process runs under it now.
    writeFileSync(path.join(attempt, 'outputs-edited.json.pid'), JSON.stringify({ pid: other.pid, start: '1' }));
    await clearInterrupted(attempt);
    expect(existsSync(attempt)).toBe(false);
    expect(isRunning(processIdentity(other.pid!))).toBe(true);

    // The same pid with its own start time is the evaluation process: the folder is kept until it has ended.
    mkdirSync(attempt);
    writeFileSync(path.join(attempt, 'outputs-edited.json.pid'), JSON.stringify(processIdentity(other.pid!)));
    let cleared = false;
    const clearing = clearInterrupted(attempt).then(() => (cleared = true));
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(cleared).toBe(false);
    expect(existsSync(attempt)).toBe(true);
    other.kill('SIGKILL');
    await clearing;
    expect(existsSync(attempt)).toBe(false);
  });
});
