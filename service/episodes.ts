// Episodes as the service keeps them: the editor-visible spec, the budgets ledger, the weight-store episode, and
// their state on disk (<output-dir>/episodes/<id>/), written as it changes so that a killed service restarts with
// every recorded op and all budget use intact.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { BudgetLedger, resolveBudgets, type Budgets, type BudgetUse } from './budgets.ts';
import { IwiError } from './errors.ts';
import { readOps, writeOp } from './episode-log.ts';
import { writeJsonAtomic } from './files.ts';
import type { ChatMessage } from './model/tokenizer.ts';
import type { Target } from './target.ts';
import type { ToolContext } from './tools/context.ts';
import { patchDigest, writeEpisodePatch } from './weights/patch.ts';
import type { Episode as WeightEpisode, WriteOutcome } from './weights/store.ts';

/** What the taskset hands the service: only what the editor may see, plus budgets. Never terminal items. */
export type EpisodeSpec = {
  family: string;
  seed: number;
  objective: string | { text: string; structured?: unknown };
  relevant_token_ids: number[];
  practice: { messages: ChatMessage[]; response: string; note?: string }[];
  budgets?: Partial<Budgets>;
  label?: string;
};

export type EpisodeStatus = 'active' | 'submitted' | 'deleted';
export type SubmittedPatch = { dir: string; sha256: string; changed_parameters: number; ops: number };

type StateFile = {
  id: string;
  key: string;
  status: EpisodeStatus;
  budgets: Budgets;
  used: BudgetUse;
  op_count: number;
  patch: SubmittedPatch | null;
  created_at: string;
  updated_at: string;
};

export class ServiceEpisode {
  status: EpisodeStatus = 'active';
  patch: SubmittedPatch | null = null;

  constructor(
    readonly id: string,
    readonly key: string,
    readonly spec: EpisodeSpec,
    readonly ledger: BudgetLedger,
    readonly weights: WeightEpisode,
    readonly dir: string,
    readonly createdAt: string,
  ) {}

  get context(): ToolContext {
    return { ledger: this.ledger, weights: this.weights.source, store: this.weights };
  }

  /** Tools and turns need a live episode. */
  requireActive(): void {
    if (this.status !== 'active') throw new IwiError('EPISODE_CLOSED', `episode ${this.id} is ${this.status}; its tools are closed`);
  }

  /** The episode key the editor presents (X-Episode-Key), compared in constant time. */
  keyMatches(presented: string | undefined): boolean {
    const a = Buffer.from(presented ?? '');
    const b = Buffer.from(this.key);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /**
   * Write state.json. Budget counters are written on every call without fsync (a killed process loses nothing;
   * a machine crash may lose the last few counts); ops and status changes are `durable`.
   */
  persist(durable = false): void {
    const state: StateFile = {
      id: this.id,
      key: this.key,
      status: this.status,
      budgets: this.ledger.limits,
      used: this.ledger.use,
      op_count: this.weights.opCount,
      patch: this.patch,
      created_at: this.createdAt,
      updated_at: new Date().toISOString(),
    };
    writeJsonAtomic(path.join(this.dir, 'state.json'), state, durable);
  }

  /** After a successful write: the op goes to disk, then the state that counts it. */
  recordWrite(outcome: WriteOutcome): void {
    writeOp(this.dir, outcome.opIndex, this.weights.ops[outcome.opIndex]!);
    this.persist(true);
  }

  summary() {
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
    };
  }
}

export class EpisodeRegistry {
  private readonly episodes = new Map<string, ServiceEpisode>();
  /** Submitted patches by SHA-256, for `<model>+patch:<sha256>`. */
  readonly patches = new Map<string, string>();

  constructor(
    private readonly target: Target,
    readonly outputDir: string,
  ) {}

  create(spec: EpisodeSpec): ServiceEpisode {
    const ledger = new BudgetLedger(resolveBudgets(spec.budgets));
    const id = `ep-${randomBytes(8).toString('hex')}`;
    const episode = new ServiceEpisode(id, randomBytes(24).toString('base64url'), spec, ledger, this.target.store.createEpisode(id), path.join(this.outputDir, 'episodes', id), new Date().toISOString());
    writeJsonAtomic(path.join(episode.dir, 'spec.json'), spec);
    episode.persist(true);
    this.episodes.set(id, episode);
    return episode;
  }

  get(id: string): ServiceEpisode {
    const episode = this.episodes.get(id);
    if (!episode) throw new IwiError('EPISODE_NOT_FOUND', `no episode "${id}"`);
    return episode;
  }

  list(): ServiceEpisode[] {
    return [...this.episodes.values()];
  }

  /** Freeze the episode and write its patch; returns the patch's digest. */
  submit(episode: ServiceEpisode, createdBy: Record<string, unknown>): SubmittedPatch {
    episode.requireActive();
    const dir = path.join(episode.dir, 'patch');
    const written = writeEpisodePatch(episode.weights, dir, { createdBy: { ...createdBy, episode: episode.id, family: episode.spec.family, seed: episode.spec.seed }, overwrite: true });
    episode.status = 'submitted';
    episode.patch = { dir, sha256: written.digest, changed_parameters: written.patch.stats.changed_parameters, ops: written.patch.ops.length };
    episode.persist(true);
    this.patches.set(written.digest, dir);
    return episode.patch;
  }

  delete(episode: ServiceEpisode): void {
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

  /** Rebuild every episode found in the output folder: spec, budget use, status, and the op log replayed. */
  restore(): number {
    const root = path.join(this.outputDir, 'episodes');
    if (!existsSync(root)) return 0;
    let restored = 0;
    for (const id of readdirSync(root).sort()) {
      const dir = path.join(root, id);
      const stateFile = path.join(dir, 'state.json');
      if (!existsSync(stateFile)) continue;
      const state = JSON.parse(readFileSync(stateFile, 'utf8')) as StateFile;
      if (state.status === 'deleted') continue;
      const spec = JSON.parse(readFileSync(path.join(dir, 'spec.json'), 'utf8')) as EpisodeSpec;
      const weights = this.target.store.createEpisode(id);
      for (const op of readOps(dir, state.op_count)) weights.apply(op);
      const episode = new ServiceEpisode(id, state.key, spec, new BudgetLedger(state.budgets, state.used), weights, dir, state.created_at);
      episode.status = state.status;
      episode.patch = state.patch;
      if (state.patch) this.patches.set(state.patch.sha256, state.patch.dir);
      this.episodes.set(id, episode);
      restored++;
    }
    return restored;
  }
}
