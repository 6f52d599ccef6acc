// The weight store: pristine weights shared by every episode, and per-episode overlays that hold only the tensors
// an episode edited (copy on first write). Every tensor lives as its BF16 bits (Uint16Array, 2 bytes per parameter):
// exactly the checkpoint's bytes, and every write rounds to BF16 (ops.ts), so nothing is lost by not keeping float32
// — which would double memory (the 4B's embedding alone is 1.3 GB as BF16) and every copy on write. Values are
// decoded only where read: a slice, a summary's stream, an op's selection, the engine's tiles. Pristine text tensors
// are read from the checkpoint on first use and kept; vision tensors are read on each use (only rare reads need them).
//
// `episode.source` is the engine's WeightSource for that episode: the engine reads the bits at every run, so a
// write is visible to the next run with no rebuild. Writes mutate the episode's own arrays in place, so a caller
// must not write while a run of the same episode is in flight (the service's single queue guarantees it).
import {
  bf16ToF32,
  type Checkpoint,
  copyBf16,
  copyBf16Steps,
  expectedTextTensors,
  readBf16,
  type WeightSource,
} from '../../engine/index.ts';
import { IwiError } from '../../core/errors.ts';
import { HandleStore, type HandleInfo } from './handles.ts';
import { LIMITS } from '../api/limits.ts';
import { Manifest, type ManifestFilter } from './manifest.ts';
import {
  checkFinite,
  commitWrite,
  inlineOperand,
  parseWriteOp,
  planWrite,
  type ArrayOperand,
  type WriteOp,
} from './ops.ts';
import { checkReadFields, nest, type ReadResult } from './reads.ts';
import type { ReadWeightsArgs } from '../api/tools.ts';
import {
  formatSlice,
  gather,
  gatherSteps,
  resolveSlice,
  type Elements,
  type Selection,
  type SliceSpec,
} from './slice.ts';
import { runSteps, runStepsInSlices, type Steps } from '../../core/steps.ts';
import { summarySteps } from './summary.ts';

export type WriteOutcome = {
  tensor: string;
  /** Elements whose BF16 bits changed. */
  changed: number;
  /** ‖W_after − W_before‖_F of this op. */
  deltaFrobenius: number;
  /** Index of this op in the episode's log (0-based). */
  opIndex: number;
  opCount: number;
};

export class WeightStore {
  readonly manifest: Manifest;
  readonly handles: HandleStore;
  /** Unedited weights, for runs outside any episode. */
  readonly pristineSource: WeightSource;
  private readonly pristine = new Map<string, Uint16Array>();
  private readonly textTensors: ReadonlySet<string>;
  private readonly episodes = new Map<string, EpisodeWeights>();

  constructor(
    readonly checkpoint: Checkpoint,
    options: { handleCount?: number; handleBytes?: number } = {},
  ) {
    this.manifest = Manifest.fromCheckpoint(checkpoint);
    this.handles = new HandleStore({
      handleCount: options.handleCount ?? LIMITS.handleCount,
      handleBytes: options.handleBytes ?? LIMITS.handleBytes,
    });
    this.textTensors = new Set(expectedTextTensors(checkpoint.config).keys());
    this.pristineSource = { bf16: (name) => this.pristineBits(name) };
  }

  /**
   * Pristine BF16 bits of a tensor (name or alias). Text tensors are read once and kept; others (vision) are read on
   * each call, since only rare reads need them. Never write into the result.
   */
  pristineBits(name: string): Uint16Array {
    const cached = this.pristine.get(name);
    if (cached) return cached;
    const canonical = this.manifest.resolve(name).name;
    let bits = this.pristine.get(canonical);
    if (!bits) {
      bits = readBf16(this.checkpoint, canonical);
      if (this.textTensors.has(canonical)) this.pristine.set(canonical, bits);
    }
    return bits;
  }

  /** Read every text tensor now (service start-up), so the first run does not pay for it. */
  preload(): void {
    for (const name of this.textTensors) this.pristineBits(name);
  }

  createEpisode(id: string): EpisodeWeights {
    if (this.episodes.has(id)) throw new Error(`episode "${id}" already exists in the weight store`);
    const episode = new EpisodeWeights(id, this);
    this.episodes.set(id, episode);
    return episode;
  }

  episode(id: string): EpisodeWeights {
    const episode = this.episodes.get(id);
    if (!episode) throw new IwiError('EPISODE_NOT_FOUND', `no episode "${id}" in the weight store`);
    return episode;
  }

  /** End an episode: its overlay and handles are freed. */
  dropEpisode(id: string): void {
    this.episodes.delete(id);
    this.handles.dropEpisode(id);
  }

  source(episodeId: string): WeightSource {
    return this.episode(episodeId).source;
  }

  /** Bytes held: pristine tensors read so far (2 per parameter), and each episode's overlay. */
  memory(): { pristineBytes: number; overlayBytes: Record<string, number> } {
    let pristineBytes = 0;
    for (const bits of this.pristine.values()) pristineBytes += bits.byteLength;
    const overlayBytes: Record<string, number> = {};
    for (const [id, episode] of this.episodes) overlayBytes[id] = episode.overlayBytes();
    return { pristineBytes, overlayBytes };
  }
}

/** One episode's weights in the store: its overlay, op log and handles (the service's episode, service/episodes.ts, holds one). */
export class EpisodeWeights {
  /** The engine's view of this episode's weights: edited tensors from the overlay, the rest pristine. */
  readonly source: WeightSource;
  private overlay = new Map<string, Uint16Array>();
  private log: WriteOp[] = [];

  constructor(
    readonly id: string,
    readonly store: WeightStore,
  ) {
    this.source = { bf16: (name) => this.bits(name) };
  }

  get manifest(): Manifest {
    return this.store.manifest;
  }

  /** The ops applied so far, in order (the patch's op list). */
  get ops(): readonly WriteOp[] {
    return this.log;
  }

  get opCount(): number {
    return this.log.length;
  }

  /** Current BF16 bits of a tensor (canonical name): the overlay's if edited, else pristine. Never write into the result. */
  bits(name: string): Uint16Array {
    return this.overlay.get(name) ?? this.store.pristineBits(name);
  }

  /**
   * read_weights: metadata, slice or summary (reads.ts). Values are the episode's current ones, exact BF16 for
   * tensors: only the selection is decoded from the bits, and a summary streams over them. A read changes nothing but
   * the episode's handles.
   */
  read(r: ReadWeightsArgs): ReadResult {
    return runSteps(this.readSteps(r));
  }

  /** read() as the service's queue runs it: a summary's passes in slices (core/steps.ts), every other read at once. */
  readInSlices(r: ReadWeightsArgs, between: () => Promise<void>): Promise<ReadResult> {
    return runStepsInSlices(this.readSteps(r), between);
  }

  private *readSteps(r: ReadWeightsArgs): Steps<ReadResult> {
    checkReadFields(r);
    const { op } = r;
    if (op === 'metadata') {
      const tensors = this.manifest.filter((r.filter ?? {}) as ManifestFilter); // validated by filter()
      return { op, count: tensors.length, tensors };
    }
    const source = this.readTarget(r);
    const spec = (r.slice ?? []) as SliceSpec;
    const selection = resolveSlice(spec, source.shape, source.label);
    const base = { target: source.label, slice: formatSlice(spec), shape: selection.shape };
    if (op === 'summary') {
      // A summary only reads: a whole tensor needs no copy (and a tensor's selection is gathered as bits, not values).
      let elements = source.data;
      if (selection.numel !== source.data.length || !isIdentity(selection)) {
        const gathered = emptyLike(source.data, selection.numel);
        yield* gatherSteps(source.data, source.shape, selection, (piece, k) => gathered.set(piece, k));
        elements = gathered;
      }
      return { op, ...base, ...(yield* summarySteps(elements, selection.shape)) };
    }
    if (r.as_handle !== true && selection.numel <= LIMITS.inlineElements)
      return { op, ...base, values: nest(decoded(gather(source.data, source.shape, selection)), selection.shape) };
    // A handle holds a float32 copy (it must never change) and is refused before copying if it could never fit.
    const origin = `slice ${source.label}${base.slice}`;
    this.store.handles.checkFits(selection.numel * Float32Array.BYTES_PER_ELEMENT, selection.shape, origin);
    const values = new Float32Array(selection.numel);
    yield* gatherSteps(source.data, source.shape, selection, (piece, k) =>
      piece instanceof Uint16Array ? bf16ToF32(piece, values.subarray(k, k + piece.length)) : values.set(piece, k),
    );
    return { op, ...base, handle: this.createHandle(values, selection.shape, origin) };
  }

  /** write_weights: validate everything, then apply. A refused op throws an IwiError and changes nothing. */
  write(request: unknown): WriteOutcome {
    return this.apply(parseWriteOp(request, this.manifest, (ref, what) => this.operand(ref, what)));
  }

  /**
   * write() as the service's queue runs it: a tensor's first copy is made a slice at a time (copyBf16Steps, with the
   * queue's `between`), then the op is applied at once. The op is parsed before anything is copied, and a copy
   * made for an op that its plan then refuses is dropped, so a refused op still changes nothing.
   */
  async writeInSlices(request: unknown, between: () => Promise<void>): Promise<WriteOutcome> {
    const op = parseWriteOp(request, this.manifest, (ref, what) => this.operand(ref, what));
    const copied = !this.overlay.has(op.tensor);
    if (copied)
      this.overlay.set(op.tensor, await runStepsInSlices(copyBf16Steps(this.store.pristineBits(op.tensor)), between));
    try {
      return this.apply(op);
    } catch (error) {
      if (copied) this.overlay.delete(op.tensor);
      throw error;
    }
  }

  /** Apply a parsed op (also how revert and patch replay run ops). */
  apply(op: WriteOp): WriteOutcome {
    const plan = planWrite(op, this.manifest, (name) => this.bits(name));
    const result = commitWrite(plan, this.own(op.tensor));
    this.log.push(op);
    return { ...result, opIndex: this.log.length - 1, opCount: this.log.length };
  }

  /** Back to pristine weights (toOpCount = 0) or to the state after the first `toOpCount` ops. */
  revert(toOpCount = 0, pristineCopies: ReadonlyMap<string, Uint16Array> = new Map()): { opCount: number } {
    const keep = this.kept(toOpCount);
    this.overlay = new Map(pristineCopies); // fresh copies of pristine tensors the kept ops write, where given
    this.log = [];
    for (const op of keep) this.apply(op); // ops replay deterministically from pristine, so none can fail here
    return { opCount: this.log.length };
  }

  /**
   * revert() as the service's queue runs it: the tensors the kept ops write are first copied from pristine a slice at
   * a time (copyBf16Steps), before anything changes, then the ops are replayed onto them at once.
   */
  async revertInSlices(toOpCount: number, between: () => Promise<void>): Promise<{ opCount: number }> {
    const copies = new Map<string, Uint16Array>();
    for (const name of new Set(this.kept(toOpCount).map((op) => op.tensor)))
      copies.set(name, await runStepsInSlices(copyBf16Steps(this.store.pristineBits(name)), between));
    return this.revert(toOpCount, copies);
  }

  /** The first `toOpCount` ops of the log, or REVERT_OUT_OF_RANGE. */
  private kept(toOpCount: number): WriteOp[] {
    if (!Number.isSafeInteger(toOpCount) || toOpCount < 0 || toOpCount > this.log.length) {
      throw new IwiError(
        'REVERT_OUT_OF_RANGE',
        `cannot revert episode "${this.id}" to op count ${JSON.stringify(toOpCount)}: it has ${this.log.length} ops (valid: 0…${this.log.length})`,
      );
    }
    return this.log.slice(0, toOpCount);
  }

  /** Tensors named by an op in the log, in manifest order (a patch's touched tensors). */
  touchedTensors(): string[] {
    const named = new Set(this.log.map((op) => op.tensor));
    return this.manifest.rows.filter((row) => named.has(row.name)).map((row) => row.name);
  }

  overlayBytes(): number {
    let bytes = 0;
    for (const bits of this.overlay.values()) bytes += bits.byteLength;
    return bytes;
  }

  /** Keep a float32 array (taken over, never written again) as an array handle of this episode (handles.ts). */
  createHandle(data: Float32Array, shape: number[], origin: string): HandleInfo {
    return this.store.handles.create(this.id, data, shape, origin);
  }

  /** The episode's own copy of a tensor, made on first write. */
  private own(name: string): Uint16Array {
    let bits = this.overlay.get(name);
    if (!bits) {
      bits = copyBf16(this.store.pristineBits(name)); // shared memory: the engine worker reads it in place
      this.overlay.set(name, bits);
    }
    return bits;
  }

  /** What a slice or summary reads: a tensor's BF16 bits or a handle's float32 values. */
  private readTarget(r: ReadWeightsArgs): ReadTarget {
    if ((r.tensor === undefined) === (r.handle === undefined)) {
      throw new IwiError(
        'OP_INVALID',
        `${String(r.op)}: give exactly one of "tensor" (a name from the manifest) or "handle" (an array handle id)`,
      );
    }
    if (r.handle !== undefined) {
      const handle = this.store.handles.get(this.id, r.handle);
      return { label: `handle ${handle.id}`, shape: handle.shape, data: handle.data };
    }
    const row = this.manifest.resolve(r.tensor);
    return { label: row.name, shape: row.shape, data: this.bits(row.name) };
  }

  /** A write operand: inline nested numbers, or `{handle: "h12"}`. */
  private operand(ref: unknown, what: string): ArrayOperand {
    if (typeof ref === 'object' && ref !== null && !Array.isArray(ref)) {
      const keys = Object.keys(ref);
      if (keys.length !== 1 || keys[0] !== 'handle')
        throw new IwiError(
          'OP_INVALID',
          `${what} must be nested lists of numbers or {"handle": id}, got an object with ${keys.join(', ') || 'no fields'}`,
        );
      const handle = this.store.handles.get(this.id, (ref as { handle: unknown }).handle);
      return checkFinite({ shape: handle.shape, data: handle.data }, `${what} (handle ${handle.id})`);
    }
    return inlineOperand(ref, what);
  }
}

type ReadTarget = { label: string; shape: readonly number[]; data: Elements };

/** An array of `length` zeros of the kind of `like` (BF16 bits or float32 values). */
function emptyLike(like: Elements, length: number): Elements {
  return like instanceof Uint16Array ? new Uint16Array(length) : new Float32Array(length);
}

function decoded(elements: Elements): Float32Array {
  return elements instanceof Uint16Array ? bf16ToF32(elements) : elements;
}

/** Every element in storage order: no dim reversed, strided or indexed away. */
function isIdentity(selection: Selection): boolean {
  return selection.dims.every((d) => d.start === 0 && d.step === 1 && d.keep);
}
