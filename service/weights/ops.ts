// The five write ops, as data, and the one code path that validates and applies them: the live store, `revert`
// and patch replay all run parse → plan → commit. `plan` checks everything and computes the new BF16 bits without
// touching any tensor; `commit` writes them in place. A refused op therefore changes nothing.
//
//   replace       slice ← values                       values: float32 array of the selection's shape
//   fill          slice ← value
//   scale         slice ← slice × factor
//   copy          slice ← source.tensor[source.slice]   same shape; reads the episode's current values
//   low_rank_add  slice += α · U Vᵀ                     selection [rows, cols], U [rows, r], V [cols, r], r ≤ 64
//
// Tensors are BF16 bits; plan decodes the elements it reads. Arithmetic is float64 (Δ_ij = Σ_k (α·U_ik)·V_jk, k
// ascending) and each result is rounded once to BF16, nearest, ties to even. Array operands are float32: inline
// numbers are converted once, when the op is parsed, so a patch stores exactly what the live store used.
import { IwiError } from '../../core/errors.ts';
import { bf16Value, numel } from '../../engine/index.ts';
import { LIMITS } from '../api/limits.ts';
import { COPY_SOURCE_FIELDS, WRITE_OP_FIELDS, WRITE_OPS, type WriteOpName } from '../api/op-fields.ts';
import type { Manifest } from './manifest.ts';
import { isNonFiniteBf16, roundToBf16Bits } from './rounding.ts';
import { forEachRun, formatSlice, gather, resolveSlice, type Selection, type SliceSpec } from './slice.ts';

/** A float32 array operand. Never mutated once made (handles and the op log share them). */
export type ArrayOperand = { shape: number[]; data: Float32Array };

/** A parsed op: canonical tensor names (aliases resolved), operands resolved to arrays. */
export type WriteOp =
  | { op: 'replace'; tensor: string; slice: SliceSpec; values: ArrayOperand }
  | { op: 'fill'; tensor: string; slice: SliceSpec; value: number }
  | { op: 'scale'; tensor: string; slice: SliceSpec; factor: number }
  | { op: 'copy'; tensor: string; slice: SliceSpec; source: { tensor: string; slice: SliceSpec } }
  | { op: 'low_rank_add'; tensor: string; slice: SliceSpec; alpha: number; u: ArrayOperand; v: ArrayOperand };

/** Turns an operand reference (inline numbers, `{handle}`, or a patch's `{array}`) into an array. */
export type OperandResolver = (ref: unknown, what: string) => ArrayOperand;

export type WriteResult = { tensor: string; changed: number; deltaFrobenius: number };

/** A validated op with the new BF16 bits of its selection (flattened row-major) computed, ready to commit. */
export type WritePlan = { op: WriteOp; selection: Selection; shape: readonly number[]; bits: Uint16Array };

/** The fields of an op request other than those its op takes (service/api/op-fields.ts) are refused. */
function checkFields(name: keyof typeof WRITE_OP_FIELDS, r: Record<string, unknown>): void {
  const allowed = ['op', ...WRITE_OP_FIELDS[name]];
  const extra = Object.keys(r).filter((k) => !allowed.includes(k));
  if (extra.length)
    throw new IwiError('OP_INVALID', `${name}: unknown field(s) ${extra.join(', ')} (fields: ${allowed.join(', ')})`);
}

/** A revert request's op count (default 0: pristine); the store checks it against the episode's ops. */
export function parseRevert(request: Record<string, unknown>): number {
  checkFields('revert', request);
  return (request.to_op_count as number | undefined) ?? 0;
}

/** Check an op request's structure, names and operands; resolve aliases and operands. */
export function parseWriteOp(request: unknown, manifest: Manifest, operand: OperandResolver): WriteOp {
  if (typeof request !== 'object' || request === null || Array.isArray(request))
    throw new IwiError('OP_INVALID', `a write op must be an object, got ${JSON.stringify(request)}`);
  const r = request as Record<string, unknown>;
  if (!(WRITE_OPS as readonly unknown[]).includes(r.op))
    throw new IwiError('OP_INVALID', `unknown write op ${JSON.stringify(r.op)} (known: ${WRITE_OPS.join(', ')})`);
  const name = r.op as WriteOpName;
  checkFields(name, r);
  const row = manifest.resolveWritable(r.tensor);
  const tensor = row.name;
  const slice = sliceField(r.slice, `${name} on "${tensor}"`);
  resolveSlice(slice, row.shape, tensor); // slice errors before operand errors; plan resolves it again
  const what = (field: string) => `${name} on "${tensor}" ${formatSlice(slice)}: ${field}`;
  switch (name) {
    case 'replace':
      return { op: name, tensor, slice, values: operand(r.values, what('values')) };
    case 'fill':
      return { op: name, tensor, slice, value: finiteScalar(r.value, what('value')) };
    case 'scale':
      return { op: name, tensor, slice, factor: finiteScalar(r.factor, what('factor')) };
    case 'copy': {
      const source = r.source as Record<string, unknown> | null;
      if (typeof source !== 'object' || source === null || Array.isArray(source))
        throw new IwiError('OP_INVALID', `${what('source')} must be {tensor, slice?}, got ${JSON.stringify(source)}`);
      const sourceFields: readonly string[] = COPY_SOURCE_FIELDS;
      const sourceExtra = Object.keys(source).filter((k) => !sourceFields.includes(k));
      if (sourceExtra.length) {
        throw new IwiError(
          'OP_INVALID',
          `${what('source')} has unknown field(s) ${sourceExtra.join(', ')} (fields: ${sourceFields.join(', ')})`,
        );
      }
      return {
        op: name,
        tensor,
        slice,
        source: { tensor: manifest.resolve(source.tensor).name, slice: sliceField(source.slice, what('source')) },
      };
    }
    case 'low_rank_add':
      return {
        op: name,
        tensor,
        slice,
        alpha: finiteScalar(r.alpha, what('alpha')),
        u: operand(r.u, what('u')),
        v: operand(r.v, what('v')),
      };
  }
}

/**
 * Validate an op against the current weights and compute its new BF16 bits (finite). `current(name)` gives the
 * episode's current BF16 bits of a tensor; nothing is written.
 */
export function planWrite(op: WriteOp, manifest: Manifest, current: (name: string) => Uint16Array): WritePlan {
  const row = manifest.resolveWritable(op.tensor);
  const selection = resolveSlice(op.slice, row.shape, row.name);
  const where = `${op.op} on "${row.name}" ${formatSlice(op.slice)}`;
  const n = selection.numel;
  let bits: Uint16Array;
  switch (op.op) {
    case 'replace': {
      expectShape(op.values.shape, selection.shape, `${where}: values`);
      const v = op.values.data;
      bits = new Uint16Array(n);
      for (let k = 0; k < n; k++) bits[k] = roundToBf16Bits(v[k]!);
      break;
    }
    case 'fill':
      bits = new Uint16Array(n).fill(roundToBf16Bits(op.value));
      break;
    case 'scale': {
      bits = gather(current(row.name), row.shape, selection);
      for (let k = 0; k < n; k++) bits[k] = roundToBf16Bits(bf16Value(bits[k]!) * op.factor);
      break;
    }
    case 'copy': {
      const source = manifest.resolve(op.source.tensor);
      const from = resolveSlice(op.source.slice, source.shape, source.name);
      expectShape(from.shape, selection.shape, `${where}: source "${source.name}" ${formatSlice(op.source.slice)}`);
      // Gathered before anything is written, so an overlapping copy within one tensor reads the old values (NumPy).
      // Every tensor is BF16 already: the bits copy as they are.
      bits = gather(current(source.name), source.shape, from);
      break;
    }
    case 'low_rank_add':
      bits = lowRankBits(op, selection, current(row.name), row.shape, where);
      break;
  }
  const bad = firstNonFiniteBits(bits);
  if (bad >= 0) {
    throw new IwiError(
      'NON_FINITE_VALUE',
      `${where}: the result at selection index ${JSON.stringify(unravel(bad, selection.shape))} is ${bf16Value(bits[bad]!)}, which BF16 cannot hold (largest finite BF16 is ±3.3895e38)`,
    );
  }
  return { op, selection, shape: row.shape, bits };
}

/** Write a plan's bits into `target` (the episode's own copy of the tensor). */
export function commitWrite(plan: WritePlan, target: Uint16Array): WriteResult {
  const { bits } = plan;
  let changed = 0;
  let sumSquares = 0;
  forEachRun(plan.selection, plan.shape, (offset, k, count, stride) => {
    for (let i = 0; i < count; i++) {
      const at = offset + i * stride;
      if (target[at] === bits[k + i]) continue;
      const d = bf16Value(bits[k + i]!) - bf16Value(target[at]!);
      sumSquares += d * d;
      changed++;
      target[at] = bits[k + i]!;
    }
  });
  return { tensor: plan.op.tensor, changed, deltaFrobenius: Math.sqrt(sumSquares) };
}

type LowRankAdd = Extract<WriteOp, { op: 'low_rank_add' }>;

function lowRankBits(
  op: LowRankAdd,
  selection: Selection,
  data: Uint16Array,
  shape: readonly number[],
  where: string,
): Uint16Array {
  if (selection.shape.length !== 2) {
    throw new IwiError(
      'SHAPE_MISMATCH',
      `${where}: low_rank_add needs a 2-d selection [rows, cols], this one is ${JSON.stringify(selection.shape)}`,
    );
  }
  const [rows, cols] = selection.shape as [number, number];
  if (op.u.shape.length !== 2 || op.v.shape.length !== 2) {
    throw new IwiError(
      'SHAPE_MISMATCH',
      `${where}: u and v must be 2-d ([rows, r] and [cols, r]), got ${JSON.stringify(op.u.shape)} and ${JSON.stringify(op.v.shape)}`,
    );
  }
  const r = op.u.shape[1]!;
  if (op.u.shape[0] !== rows || op.v.shape[0] !== cols || op.v.shape[1] !== r) {
    throw new IwiError(
      'SHAPE_MISMATCH',
      `${where}: selection is [${rows}, ${cols}], so u must be [${rows}, r] and v [${cols}, r]; got u ${JSON.stringify(op.u.shape)}, v ${JSON.stringify(op.v.shape)}`,
    );
  }
  if (r < 1 || r > LIMITS.maxRank)
    throw new IwiError('OP_INVALID', `${where}: rank ${r} is outside 1…${LIMITS.maxRank}`);
  const out = gather(data, shape, selection);
  const u = op.u.data;
  const v = new Float64Array(op.v.data); // float64 once, not per multiply
  const a = new Float64Array(r);
  for (let i = 0; i < rows; i++) {
    for (let k = 0; k < r; k++) a[k] = op.alpha * u[i * r + k]!;
    const row = i * cols;
    for (let j = 0; j < cols; j++) {
      let delta = 0;
      const vj = j * r;
      for (let k = 0; k < r; k++) delta += a[k]! * v[vj + k]!;
      out[row + j] = roundToBf16Bits(bf16Value(out[row + j]!) + delta);
    }
  }
  return out;
}

function sliceField(slice: unknown, where: string): SliceSpec {
  if (slice === undefined || slice === null) return [];
  if (!Array.isArray(slice))
    throw new IwiError(
      'SLICE_INVALID',
      `${where}: slice must be a list with one entry per dimension, got ${JSON.stringify(slice)}`,
    );
  // Copied so the op log never shares arrays with the caller; entries are checked against the shape by resolveSlice.
  return slice.map((entry: unknown) => (Array.isArray(entry) ? [...entry] : entry)) as SliceSpec;
}

function finiteScalar(value: unknown, what: string): number {
  if (typeof value !== 'number')
    throw new IwiError('OP_INVALID', `${what} must be a number, got ${JSON.stringify(value)}`);
  if (!Number.isFinite(value))
    throw new IwiError('NON_FINITE_VALUE', `${what} is ${value}; only finite numbers are allowed`);
  return value;
}

function expectShape(got: readonly number[], want: readonly number[], what: string): void {
  if (got.length !== want.length || got.some((d, i) => d !== want[i])) {
    throw new IwiError(
      'SHAPE_MISMATCH',
      `${what} have shape ${JSON.stringify(got)}, the selection has shape ${JSON.stringify(want)} (no broadcasting)`,
    );
  }
}

function firstNonFiniteBits(bits: Uint16Array): number {
  for (let k = 0; k < bits.length; k++) if (isNonFiniteBf16(bits[k]!)) return k;
  return -1;
}

function firstNonFinite(values: Float32Array): number {
  for (let k = 0; k < values.length; k++) if (!Number.isFinite(values[k]!)) return k;
  return -1;
}

/** Row-major multi-index of flat index k in `shape`. */
export function unravel(k: number, shape: readonly number[]): number[] {
  const index = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    index[d] = k % shape[d]!;
    k = Math.floor(k / shape[d]!);
  }
  return index;
}

const MAX_OPERAND_DIMS = 8; // tensors here have at most 4 dims; bounds the recursion on hostile input

/**
 * Inline operand: nested lists of numbers (a bare number is a 0-d array), rectangular, converted to float32.
 * Refuses ragged lists, non-numbers, more than LIMITS.inlineOperandElements values, and values that are not
 * finite in float32.
 */
export function inlineOperand(value: unknown, what: string, limit = LIMITS.inlineOperandElements): ArrayOperand {
  const shape: number[] = [];
  for (let probe = value; Array.isArray(probe); probe = probe[0]) {
    if (shape.length === MAX_OPERAND_DIMS)
      throw new IwiError('SHAPE_MISMATCH', `${what}: nested more than ${MAX_OPERAND_DIMS} lists deep`);
    shape.push(probe.length);
  }
  const count = numel(shape);
  if (count > limit)
    throw new IwiError(
      'OP_INVALID',
      `${what}: ${count} inline values are more than ${limit}; pass larger arrays as a handle`,
    );
  const data = new Float32Array(count);
  let k = 0;
  const walk = (node: unknown, d: number, path: number[]): void => {
    if (d === shape.length) {
      if (typeof node !== 'number')
        throw new IwiError(
          'OP_INVALID',
          `${what}: element ${JSON.stringify(path)} is ${JSON.stringify(node)}, not a number`,
        );
      const x = Math.fround(node);
      if (!Number.isFinite(x))
        throw new IwiError(
          'NON_FINITE_VALUE',
          `${what}: element ${JSON.stringify(path)} is ${node}${Number.isFinite(node) ? ', which overflows float32' : ''}`,
        );
      data[k++] = x;
      return;
    }
    if (!Array.isArray(node) || node.length !== shape[d]) {
      throw new IwiError(
        'SHAPE_MISMATCH',
        `${what}: ragged nested list: ${path.length ? `element ${JSON.stringify(path)}` : 'the list'} should be a list of ${shape[d]} entries, got ${Array.isArray(node) ? `${node.length} entries` : JSON.stringify(node)}`,
      );
    }
    node.forEach((child, i) => walk(child, d + 1, [...path, i]));
  };
  walk(value, 0, []);
  return { shape, data };
}

/** Refuse a handle or stored array holding NaN/±Inf (inline operands are checked as they are parsed). */
export function checkFinite(operand: ArrayOperand, what: string): ArrayOperand {
  const bad = firstNonFinite(operand.data);
  if (bad >= 0)
    throw new IwiError(
      'NON_FINITE_VALUE',
      `${what}: element ${JSON.stringify(unravel(bad, operand.shape))} is ${operand.data[bad]}`,
    );
  return operand;
}
