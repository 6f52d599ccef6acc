// The tensor manifest: every tensor of the checkpoint with its shape, dtype, size, whether the editor may write it,
// its other names (the tied LM head) and its layer and kind, filterable so the editor can ask for part of it.
import {
  type Checkpoint,
  type DType,
  expectedTextTensors,
  isVisionTensor,
  kindOf,
  layerOf,
  numel,
  TENSOR_KINDS,
  type TensorKind,
  tiedAliases,
} from '../../engine/index.ts';
import { IwiError, quote } from '../../core/errors.ts';

export { TENSOR_KINDS, type TensorKind };

export type ManifestRow = {
  name: string;
  shape: number[];
  dtype: DType;
  numel: number;
  writable: boolean;
  /** Other names of this same tensor, e.g. the tied LM head of embed_tokens; a write through any of them is one write. */
  aliases: string[];
  /** Decoder layer, or null for embeddings, the final norm and vision tensors. */
  layer: number | null;
  kind: TensorKind;
  /** Why a tensor is not writable. */
  fixed_reason?: string;
};

export type ManifestFilter = {
  /** Glob over names and aliases (`*` any run of characters, `?` one); without a wildcard, a substring. */
  name?: string;
  layer?: number | number[];
  kind?: TensorKind | TensorKind[];
  writable?: boolean;
};

export class Manifest {
  private readonly byName = new Map<string, ManifestRow>();
  private readonly aliasOf = new Map<string, string>();

  private constructor(readonly rows: readonly ManifestRow[]) {
    for (const row of rows) {
      this.byName.set(row.name, row);
      for (const alias of row.aliases) this.aliasOf.set(alias, row.name);
    }
  }

  static fromCheckpoint(checkpoint: Checkpoint): Manifest {
    const text = expectedTextTensors(checkpoint.config);
    const aliases = new Map<string, string[]>();
    for (const [alias, target] of Object.entries(tiedAliases(checkpoint.config)))
      aliases.set(target, [...(aliases.get(target) ?? []), alias]);
    // Text decoder in checkpoint order (embeddings, layers, final norm), then everything else by name.
    const names = [...text.keys(), ...[...checkpoint.tensors.keys()].filter((n) => !text.has(n)).sort()];
    const rows = names.map((name): ManifestRow => {
      const info = checkpoint.info(name);
      const vision = isVisionTensor(name);
      const fixedReason = vision
        ? 'vision tower and projector are fixed: the benchmark edits the text decoder only'
        : !text.has(name)
          ? 'not a tensor of the Gemma 3 text decoder'
          : info.dtype !== 'BF16'
            ? `stored as ${info.dtype}; only BF16 tensors are editable`
            : undefined;
      return {
        name,
        shape: [...info.shape],
        dtype: info.dtype,
        numel: numel(info.shape),
        writable: fixedReason === undefined,
        aliases: aliases.get(name) ?? [],
        layer: vision ? null : (layerOf(name) ?? null),
        kind: kindOf(name),
        ...(fixedReason ? { fixed_reason: fixedReason } : {}),
      };
    });
    return new Manifest(rows);
  }

  /** The row of a tensor name or alias; WEIGHT_NOT_FOUND (with suggestions) otherwise. */
  resolve(name: unknown): ManifestRow {
    if (typeof name !== 'string' || name === '')
      throw new IwiError('WEIGHT_NOT_FOUND', `a tensor name must be a non-empty string, got ${quote(name)}`);
    const row = this.byName.get(this.aliasOf.get(name) ?? name);
    if (row) return row;
    const near = [...this.byName.keys(), ...this.aliasOf.keys()]
      .filter((n) => n.includes(name))
      .slice(0, 3)
      .map((n) => `"${n}"`);
    throw new IwiError(
      'WEIGHT_NOT_FOUND',
      `no tensor named ${quote(name)}${near.length ? ` (did you mean ${near.join(', ')}?)` : ''}; read_weights metadata lists them all`,
    );
  }

  /** The row of a tensor the editor may write; WEIGHT_NOT_WRITABLE names the reason otherwise. */
  resolveWritable(name: unknown): ManifestRow {
    const row = this.resolve(name);
    if (!row.writable)
      throw new IwiError('WEIGHT_NOT_WRITABLE', `tensor "${row.name}" is not writable: ${row.fixed_reason}`);
    return row;
  }

  filter(filter: ManifestFilter = {}): ManifestRow[] {
    const { name, layer, kind, writable } = validateFilter(filter);
    const match = name === undefined ? undefined : nameMatcher(name);
    return this.rows.filter(
      (row) =>
        (match === undefined || match(row.name) || row.aliases.some(match)) &&
        (layer === undefined || (row.layer !== null && layer.includes(row.layer))) &&
        (kind === undefined || kind.includes(row.kind)) &&
        (writable === undefined || row.writable === writable),
    );
  }
}

function validateFilter(filter: unknown): { name?: string; layer?: number[]; kind?: TensorKind[]; writable?: boolean } {
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter))
    throw new IwiError('OP_INVALID', `a manifest filter must be an object, got ${JSON.stringify(filter)}`);
  const { name, layer, kind, writable, ...rest } = filter as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length)
    throw new IwiError(
      'OP_INVALID',
      `unknown manifest filter field(s) ${unknown.join(', ')} (known: name, layer, kind, writable)`,
    );
  if (name !== undefined && typeof name !== 'string')
    throw new IwiError('OP_INVALID', `filter.name must be a string pattern, got ${JSON.stringify(name)}`);
  const layers = layer === undefined ? undefined : Array.isArray(layer) ? layer : [layer];
  if (layers && !layers.every((l) => Number.isSafeInteger(l)))
    throw new IwiError(
      'OP_INVALID',
      `filter.layer must be an integer or a list of integers, got ${JSON.stringify(layer)}`,
    );
  const kinds = kind === undefined ? undefined : Array.isArray(kind) ? kind : [kind];
  if (kinds && !kinds.every((k) => (TENSOR_KINDS as readonly unknown[]).includes(k))) {
    throw new IwiError(
      'OP_INVALID',
      `filter.kind must be one or more of ${TENSOR_KINDS.join(', ')}, got ${JSON.stringify(kind)}`,
    );
  }
  if (writable !== undefined && typeof writable !== 'boolean')
    throw new IwiError('OP_INVALID', `filter.writable must be true or false, got ${JSON.stringify(writable)}`);
  return {
    name: name as string | undefined,
    layer: layers as number[] | undefined,
    kind: kinds as TensorKind[] | undefined,
    writable: writable as boolean | undefined,
  };
}

/** Glob (no regex from user input: no catastrophic backtracking) or substring. */
function nameMatcher(pattern: string): (name: string) => boolean {
  if (!/[*?]/.test(pattern)) return (name) => name.includes(pattern);
  return (name) => globMatch(pattern, name);
}

function globMatch(pattern: string, text: string): boolean {
  // Iterative matcher with one backtrack point for the last '*': linear in practice.
  let p = 0,
    t = 0,
    star = -1,
    mark = 0;
  while (t < text.length) {
    if (p < pattern.length && (pattern[p] === '?' || pattern[p] === text[t])) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === '*') {
      star = p++;
      mark = t;
    } else if (star >= 0) {
      p = star + 1;
      t = ++mark;
    } else return false;
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}
