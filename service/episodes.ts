// Episodes as the service keeps them: the editor-visible spec, the budgets ledger, the weight-store episode, and
// their state on disk (<output-dir>/episodes/<id>/), written as it changes so that a killed service restarts with
// every recorded op and all budget use intact. Episode keys are kept only as SHA-256 hashes, in files only the
// service's user can read.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { EpisodeCreate, EpisodeLease, EpisodeStatus, EpisodeSummary, SubmittedPatch } from './api/index.ts';
import { BudgetLedger, resolveBudgets, type Budgets, type BudgetUse } from './budgets.ts';
import { IwiError, quote } from './errors.ts';
import { readOps, writeOp } from './episode-log.ts';
import { SECRET_FILE_MODE, removeAtomicLeftovers, writeJsonAtomic } from '../core/files.ts';
import type { Target } from './target.ts';
import type { ToolContext } from './tools/context.ts';
import { type EpisodeWeights, patchDigest, writeEpisodePatch, type WriteOutcome } from './weights/index.ts';

type StateFile = {
  id: string;
  /** SHA-256 of the episode key, hex. The key itself is returned once, by POST /episodes, and never stored. */
  key_sha256: string;
  status: EpisodeStatus;
  budgets: Budgets;
  used: BudgetUse;
  op_count: number;
  patch: SubmittedPatch | null;
  created_at: string;
  updated_at: string;
};

/** state.json as versions before key hashing wrote it: the key in clear. */
type LegacyStateFile = Omit<StateFile, 'key_sha256'> & { key: string };

const keyHash = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest();

/** A presented key against a stored hash: SHA-256 digests compared in constant time (equal lengths whatever the input). */
const keyOpens = (stored: Buffer, presented: string | undefined): boolean =>
  timingSafeEqual(keyHash(presented ?? ''), stored);

/** The hash of a key never given out: an unknown episode id costs the same comparison as a wrong key. */
const NO_EPISODE_KEY = keyHash(randomBytes(24).toString('base64url'));

/** One episode as the service runs it: the spec it was created with, its budgets, its weights, its state on disk. */
export class EpisodeSession {
  status: EpisodeStatus = 'active';
  patch: SubmittedPatch | null = null;
  /**
   * When the lease ends (ms since the epoch) unless renewed; null without a lease. A restored episode gets a whole
   * lease from the service's start: a live holder renews it, a dead one's episode goes one lease later.
   */
  leaseEnds: number | null;

  constructor(
    readonly id: string,
    readonly keySha256: Buffer,
    readonly spec: EpisodeCreate,
    readonly ledger: BudgetLedger,
    readonly weights: EpisodeWeights,
    readonly dir: string,
    readonly createdAt: string,
  ) {
    this.leaseEnds = spec.lease_seconds ? Date.now() + spec.lease_seconds * 1000 : null;
  }

  /** Another whole lease from now; an episode created without one has none to renew. */
  renewLease(): EpisodeLease {
    if (!this.spec.lease_seconds)
      throw new IwiError('EPISODE_NO_LEASE', `episode ${this.id} was created without lease_seconds`);
    this.leaseEnds = Date.now() + this.spec.lease_seconds * 1000;
    return this.lease!;
  }

  get lease(): EpisodeLease | null {
    if (!this.spec.lease_seconds || this.leaseEnds === null) return null;
    return { seconds: this.spec.lease_seconds, expires_at: new Date(this.leaseEnds).toISOString() };
  }

  get context(): ToolContext {
    return { ledger: this.ledger, weights: this.weights.source, store: this.weights };
  }

  /** Tools and turns need a live episode. */
  requireActive(): void {
    if (this.status !== 'active')
      throw new IwiError('EPISODE_CLOSED', `episode ${this.id} is ${this.status}; its tools are closed`);
  }

  /** The episode key the editor presents (X-Episode-Key): its hash compared with the stored one in constant time. */
  keyMatches(presented: string | undefined): boolean {
    return keyOpens(this.keySha256, presented);
  }

  /**
   * Write state.json. Budget counters are written on every call without fsync (a killed process loses nothing;
   * a machine crash may lose the last few counts); ops and status changes are `durable`.
   */
  persist(durable = false): void {
    const state: StateFile = {
      id: this.id,
      key_sha256: this.keySha256.toString('hex'),
      status: this.status,
      budgets: this.ledger.limits,
      used: this.ledger.use,
      op_count: this.weights.opCount,
      patch: this.patch,
      created_at: this.createdAt,
      updated_at: new Date().toISOString(),
    };
    writeJsonAtomic(path.join(this.dir, 'state.json'), state, durable, SECRET_FILE_MODE);
  }

  /** After a successful write: the op goes to disk, then the state that counts it. */
  recordWrite(outcome: WriteOutcome): void {
    writeOp(this.dir, outcome.opIndex, this.weights.ops[outcome.opIndex]!);
    this.persist(true);
  }

  summary(): EpisodeSummary {
    return {
      id: this.id,
      family: this.spec.family,
      seed: this.spec.seed,
      label: this.spec.label ?? null,
      status: this.status,
      op_count: this.weights.opCount,
      touched_tensors: this.weights.touchedTensors(),
      budget: this.ledger.state(),
      patch: this.patch,
      created_at: this.createdAt,
      lease: this.lease,
    };
  }
}

export class EpisodeRegistry {
  private readonly episodes = new Map<string, EpisodeSession>();
  /** Submitted patches by SHA-256, for `<model>+patch:<sha256>`. */
  readonly patches = new Map<string, string>();

  constructor(
    private readonly target: Target,
    readonly outputDir: string,
  ) {}

  /** A new episode and its key: the only time the key exists outside the editor's hands. */
  create(spec: EpisodeCreate): { episode: EpisodeSession; key: string } {
    const ledger = new BudgetLedger(resolveBudgets(spec.budgets));
    const id = `ep-${randomBytes(8).toString('hex')}`;
    const key = randomBytes(24).toString('base64url');
    const dir = path.join(this.outputDir, 'episodes', id);
    const episode = new EpisodeSession(
      id,
      keyHash(key),
      spec,
      ledger,
      this.target.store.createEpisode(id),
      dir,
      new Date().toISOString(),
    );
    writeJsonAtomic(path.join(episode.dir, 'spec.json'), spec);
    episode.persist(true);
    this.episodes.set(id, episode);
    return { episode, key };
  }

  /** An episode by id, for the admin: 404 when there is none. */
  get(id: string): EpisodeSession {
    const episode = this.episodes.get(id);
    if (!episode) throw new IwiError('EPISODE_NOT_FOUND', `no episode ${quote(id)}`);
    return episode;
  }

  /**
   * The episode an editor's X-Episode-Key opens. An unknown id and another episode's id get the same 403 and the
   * same message (and the same hash comparison), so an editor cannot probe which ids exist.
   */
  forEditor(id: string, presentedKey: string | undefined): EpisodeSession {
    const episode = this.episodes.get(id);
    const opens = keyOpens(episode?.keySha256 ?? NO_EPISODE_KEY, presentedKey);
    if (!episode || !opens) {
      throw new IwiError(
        'FORBIDDEN',
        `the editor token may only reach its own episode: this X-Episode-Key does not open episode ${quote(id)}`,
      );
    }
    return episode;
  }

  list(): EpisodeSession[] {
    return [...this.episodes.values()];
  }

  /** Freeze the episode and write its patch; returns the patch's digest. */
  submit(episode: EpisodeSession, createdBy: Record<string, unknown>): SubmittedPatch {
    episode.requireActive();
    const dir = path.join(episode.dir, 'patch');
    const written = writeEpisodePatch(episode.weights, dir, {
      createdBy: { ...createdBy, episode: episode.id, family: episode.spec.family, seed: episode.spec.seed },
      overwrite: true,
    });
    episode.status = 'submitted';
    episode.patch = {
      dir,
      sha256: written.digest,
      changed_parameters: written.patch.stats.changed_parameters,
      ops: written.patch.ops.length,
    };
    episode.persist(true);
    this.patches.set(written.digest, dir);
    return episode.patch;
  }

  /** The episodes whose lease ended before `now`, for the service to delete (as DELETE does). */
  expired(now = Date.now()): EpisodeSession[] {
    return this.list().filter((episode) => episode.leaseEnds !== null && episode.leaseEnds < now);
  }

  delete(episode: EpisodeSession): void {
    episode.status = 'deleted';
    episode.persist(true);
    this.target.store.dropEpisode(episode.id);
    this.episodes.delete(episode.id);
  }

  /** Register a patch folder from elsewhere (e.g. another run) for the OpenAI endpoints; returns its digest. */
  registerPatch(dir: string): string {
    const digest = patchDigest(dir);
    this.patches.set(digest, path.resolve(dir));
    return digest;
  }

  /**
   * Rebuild every episode found in the output folder: spec, budget use, status, and the op log replayed. First the
   * temp files that killed atomic writes left are removed. A state.json of an older version, with the key in clear,
   * is migrated: the key is hashed and the file rewritten (mode 0600) without it; the editor's key keeps working.
   */
  restore(): { restored: number; migrated: number; leftovers: number } {
    const counts = { restored: 0, migrated: 0, leftovers: 0 };
    if (!existsSync(this.outputDir)) return counts;
    counts.leftovers = removeAtomicLeftovers(this.outputDir).length;
    const root = path.join(this.outputDir, 'episodes');
    if (!existsSync(root)) return counts;
    for (const id of readdirSync(root).sort()) {
      const dir = path.join(root, id);
      const stateFile = path.join(dir, 'state.json');
      if (!existsSync(stateFile)) continue;
      const state = JSON.parse(readFileSync(stateFile, 'utf8')) as StateFile | LegacyStateFile;
      if (state.status === 'deleted') continue;
      const spec = JSON.parse(readFileSync(path.join(dir, 'spec.json'), 'utf8')) as EpisodeCreate;
      const weights = this.target.store.createEpisode(id);
      for (const op of readOps(dir, state.op_count)) weights.apply(op);
      const hash = 'key_sha256' in state ? Buffer.from(state.key_sha256, 'hex') : keyHash(state.key);
      const episode = new EpisodeSession(
        id,
        hash,
        spec,
        new BudgetLedger(state.budgets, state.used),
        weights,
        dir,
        state.created_at,
      );
      episode.status = state.status;
      episode.patch = state.patch;
      if (state.patch) this.patches.set(state.patch.sha256, state.patch.dir);
      this.episodes.set(id, episode);
      if (!('key_sha256' in state)) {
        episode.persist(true);
        counts.migrated++;
      }
      counts.restored++;
    }
    return counts;
  }
}
