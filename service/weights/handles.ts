// Array handles: server-side float32 arrays made by reads (and the service's inspections), usable as write operands
// without sending numbers through the editor's context. Bounded per episode in count and bytes (LIMITS); making a
// handle past a bound evicts that episode's least recently used handles, which then answer HANDLE_EXPIRED. Ids are
// issued from one counter per store, so an id from another episode is recognised as foreign, not as unknown.
// A handle's array is never written after creation: ops and the op log may keep references to it.
import { IwiError, quote } from '../../core/errors.ts';
import { numel } from '../../engine/index.ts';
import { LIMITS } from '../api/limits.ts';

export type ArrayHandle = {
  id: string;
  shape: number[];
  data: Float32Array;
  /** What made it, for the editor: e.g. `slice model.layers.3.mlp.down_proj.weight[0:8, :]`. */
  origin: string;
};

/** What a tool result shows of a handle. */
export type HandleInfo = { id: string; shape: number[]; bytes: number; origin: string };

type EpisodeHandles = { live: Map<string, ArrayHandle>; bytes: number; gone: Map<string, string> };

export class HandleStore {
  private next = 1;
  private readonly owner = new Map<string, string>(); // every id ever issued → its episode
  private readonly episodes = new Map<string, EpisodeHandles>();

  constructor(private readonly limits: { handleCount: number; handleBytes: number } = LIMITS) {}

  /** Store `data` (taken over, not copied) for `episode`; evicts that episode's least recently used handles to fit. */
  create(episode: string, data: Float32Array, shape: number[], origin: string): HandleInfo {
    if (data.length !== numel(shape))
      throw new Error(`handle data has ${data.length} values, shape ${JSON.stringify(shape)} needs ${numel(shape)}`);
    const bytes = data.byteLength;
    this.checkFits(bytes, shape, origin);
    const state = this.state(episode);
    for (const [id, handle] of state.live) {
      if (state.live.size < this.limits.handleCount && state.bytes + bytes <= this.limits.handleBytes) break;
      this.drop(
        state,
        id,
        handle,
        `evicted to stay within ${this.limits.handleCount} handles / ${formatBytes(this.limits.handleBytes)} per episode (least recently used first)`,
      );
    }
    const id = `h${this.next++}`;
    state.live.set(id, { id, shape: [...shape], data, origin });
    state.bytes += bytes;
    this.owner.set(id, episode);
    return { id, shape: [...shape], bytes, origin };
  }

  /** HANDLE_LIMIT unless an array of `bytes` could be a handle (alone within the byte bound). */
  checkFits(bytes: number, shape: readonly number[], origin: string): void {
    if (bytes <= this.limits.handleBytes) return;
    throw new IwiError(
      'HANDLE_LIMIT',
      `${origin}: ${shape.join('×')} float32 values need ${formatBytes(bytes)}, more than the ${formatBytes(this.limits.handleBytes)} an episode's handles may hold; read a smaller slice`,
    );
  }

  /** The handle `id` of `episode`; marks it as recently used. */
  get(episode: string, id: unknown): ArrayHandle {
    if (typeof id !== 'string')
      throw new IwiError('HANDLE_NOT_FOUND', `a handle id must be a string like "h12", got ${quote(id)}`);
    const owner = this.owner.get(id);
    if (owner === undefined) throw new IwiError('HANDLE_NOT_FOUND', `no array handle ${quote(id)} was ever issued`);
    if (owner !== episode) throw new IwiError('HANDLE_FOREIGN', `array handle "${id}" belongs to another episode`);
    const state = this.state(episode);
    const handle = state.live.get(id);
    if (!handle)
      throw new IwiError(
        'HANDLE_EXPIRED',
        `array handle "${id}" has expired: ${state.gone.get(id) ?? 'its episode ended'}`,
      );
    state.live.delete(id); // Map order is the recency order
    state.live.set(id, handle);
    return handle;
  }

  release(episode: string, id: string): void {
    const handle = this.get(episode, id);
    this.drop(this.state(episode), id, handle, 'released');
  }

  list(episode: string): HandleInfo[] {
    return [...(this.episodes.get(episode)?.live.values() ?? [])].map((h) => ({
      id: h.id,
      shape: [...h.shape],
      bytes: h.data.byteLength,
      origin: h.origin,
    }));
  }

  usage(episode: string): { count: number; bytes: number } {
    const state = this.episodes.get(episode);
    return { count: state?.live.size ?? 0, bytes: state?.bytes ?? 0 };
  }

  /** Forget an episode's handles (its ids stay known, so they answer "expired", or "foreign" to others). */
  dropEpisode(episode: string): void {
    this.episodes.delete(episode);
  }

  private state(episode: string): EpisodeHandles {
    let state = this.episodes.get(episode);
    if (!state) {
      state = { live: new Map(), bytes: 0, gone: new Map() };
      this.episodes.set(episode, state);
    }
    return state;
  }

  private drop(state: EpisodeHandles, id: string, handle: ArrayHandle, why: string): void {
    state.live.delete(id);
    state.bytes -= handle.data.byteLength;
    state.gone.set(id, why);
  }
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
  if (bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} B`;
}
