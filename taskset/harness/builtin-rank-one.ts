// builtin:rank-one — the reference editor that needs no LLM and no gradients, only the four tools. It makes the
// target produce the practice examples' requested responses by rank-one additions to the last layer's MLP
// down-projection, one per answer token the target gets wrong (for a local factual update: the name tokens):
//
//   1. inspect_target, teacher-forced on the practice responses: where does the target's greedy token differ?
//   2. The key at each such position is the down-projection's input, act = gelu(G·x) ⊙ (U·x) with
//      x = pre_feedforward_norm(h). h, the residual stream before that MLP, is read with a probe: with the
//      down-projection zeroed the MLP adds nothing, so the layer's output is h (write, inspect, revert).
//      G and U come from read_weights.
//   3. The value direction raises the wanted token's logit over the predicted one: (E[want] − E[got]) scaled by the
//      final norm's (1 + w) and divided by the post-feedforward norm's (1 + w), through which the MLP output passes.
//   4. W_down += α · u vᵀ with v ∝ (C + λI)⁻¹ k and vᵀk = 1 (k averaged over the examples; C the second moment of
//      every other inspected key, as ROME whitens its key), all terms in one low_rank_add; α is the smallest power of
//      two that gives ¾ of the practice targets (a binary search checked with run_target).
//
// Editing the last layer keeps every position independent (no later layer reads it), so one teacher-forced pass
// finds every wrong token at once. It is a baseline: it edits what the practice examples show and nothing more.
import type { ChatMessage } from '../../core/chat.ts';
import type { BuiltinEditor, EpisodeHandle } from './builtin.ts';

const TARGET_NOTE = 'the requested behaviour';
const MAX_EXAMPLES = 4; // inspect_target takes 4 sequences a call
const MAX_EDITS = 12; // wrong answer tokens fixed (the terms of one low_rank_add)
const MAX_EXPONENT = 12; // α ∈ {1, 2, 4, …, 4096}
const SUCCESS_SHARE = 0.75; // of the practice targets, for an α to count as enough
const INLINE_VALUES = 1024; // read_weights returns this many values inline
const RIDGE_SHARE = 0.05; // λ of the key whitening, as a share of the mean eigenvalue

type Row = number[];
type InspectPosition = { position: number; next: { id: number } | null; top_k: { id: number }[] };
type InspectResult = {
  sequences: { positions: InspectPosition[]; hidden: Record<string, { id: string; shape: number[] }> }[];
};
type Example = { messages: ChatMessage[]; response: string };
type Mismatch = { sequence: number; row: number; want: number; got: number };

export const rankOne: BuiltinEditor = async ({ editor: episode, brief }) => {
  // Tool calls left in the episode, from every answer: the α search must still fit after the reads.
  let callsLeft = brief.budget.remaining.tool_calls ?? Infinity;
  const editor: EpisodeHandle = {
    ...episode,
    tool: async (name, args) => {
      const response = await episode.tool(name, args);
      callsLeft = response.budget.remaining.tool_calls ?? callsLeft;
      return response;
    },
  };
  const targets = brief.practice.filter((p) => p.note === TARGET_NOTE) as Example[];
  const examples = targets.slice(0, MAX_EXAMPLES);
  const keeps = brief.practice.filter((p) => p.note !== TARGET_NOTE).slice(0, MAX_EXAMPLES) as Example[];
  const layer = brief.target.layers - 1;
  // The brief's manifest folds layers: "model.layers.{0..3}.mlp.down_proj.weight [128, 256] BF16 writable".
  const tensorNames = brief.manifest.map((line) => line.split(' ')[0]!);
  const tensor = (suffix: string, inLayer?: number) => {
    const name = tensorNames.find((n) => n.endsWith(suffix) && (inLayer === undefined) === !n.includes('.layers.'));
    if (!name) throw new Error(`builtin:rank-one: no tensor "${suffix}" in the manifest`);
    return inLayer === undefined ? name : name.replace(/\{\d+\.\.\d+\}/, String(inLayer));
  };
  const names = {
    down: tensor('mlp.down_proj.weight', layer),
    gate: tensor('mlp.gate_proj.weight', layer),
    up: tensor('mlp.up_proj.weight', layer),
    preNorm: tensor('pre_feedforward_layernorm.weight', layer),
    postNorm: tensor('post_feedforward_layernorm.weight', layer),
    finalNorm: tensor('norm.weight'),
    embed: tensor('embed_tokens.weight'),
  };
  // The turn's end is part of the answer: a response the target runs past is not the response.
  const teacherForced = (e: Example) => ({ messages: e.messages, continuation: `${e.response}<end_of_turn>` });
  const sequences = examples.map(teacherForced);

  // 1. Where do the greedy tokens differ from the requested responses (teacher-forced)?
  await editor.turn();
  const before = (await editor.tool('inspect_target', { sequences, top_k: 1 })).result as InspectResult;
  const byRow = new Map<number, Mismatch[]>();
  before.sequences.forEach((s, sequence) =>
    s.positions.forEach((p, row) => {
      const got = p.top_k[0]?.id;
      if (p.next && got !== undefined && got !== p.next.id)
        byRow.set(row, [...(byRow.get(row) ?? []), { sequence, row, want: p.next.id, got }]);
    }),
  );
  const groups = [...byRow.keys()]
    .sort((a, b) => a - b)
    .slice(0, MAX_EDITS)
    .map((row) => byRow.get(row)!);
  if (groups.length === 0)
    return { finalReply: 'builtin:rank-one: the target already gives the practice responses; no edit made.' };

  // 2. The residual stream before the last MLP, by a probe that zeroes the down-projection; then back to pristine.
  //    On the target examples (the keys to edit, and the keys of tokens already right) and on the kept examples.
  await editor.turn();
  await editor.tool('write_weights', { op: 'fill', tensor: names.down, value: 0 });
  const probed = (await editor.tool('inspect_target', { sequences, layers: [layer], top_k: 1 }))
    .result as InspectResult;
  const probedKeeps =
    keeps.length > 0
      ? ((await editor.tool('inspect_target', { sequences: keeps.map(teacherForced), layers: [layer], top_k: 1 }))
          .result as InspectResult)
      : { sequences: [] };
  await editor.tool('write_weights', { op: 'revert', to_op_count: 0 });

  await editor.turn();
  const [preNorm, postNorm, finalNorm] = await Promise.all(
    [names.preNorm, names.postNorm, names.finalNorm].map((n) => readSlice(editor, { tensor: n }) as Promise<Row>),
  );
  const H = brief.target.hidden_size;
  const intermediate = Number(
    /\[(\d+), ?\d+\]/.exec(brief.manifest.find((l) => l.includes('mlp.gate_proj.weight'))!)![1],
  );
  const gate = await readRows(editor, { tensor: names.gate }, 0, intermediate, H);
  const up = await readRows(editor, { tensor: names.up }, 0, intermediate, H);
  // Every inspected position's key: the wrong ones are edited, all the others are keys the edit should leave alone.
  const allRows = async (result: InspectResult) =>
    Promise.all(
      result.sequences.map((s) => readRows(editor, { handle: s.hidden[String(layer)]!.id }, 0, s.positions.length, H)),
    );
  const keyOf = (h: Row) => mlpKey(h, preNorm, gate, up);
  const targetKeys = (await allRows(probed)).map((rows) => rows.map(keyOf));
  const edited = new Set(groups.flat().map((m) => `${m.sequence}/${m.row}`));
  const others = [
    ...targetKeys.flatMap((keys, sequence) => keys.filter((_, row) => !edited.has(`${sequence}/${row}`))),
    ...(await allRows(probedKeeps)).flatMap((rows) => rows.map(keyOf)),
  ];
  const whiten = ridgeSolver(others);
  const embedding = new Map<number, Promise<Row>>();
  const embedRow = (id: number) => {
    if (!embedding.has(id))
      embedding.set(
        id,
        readRows(editor, { tensor: names.embed }, id, id + 1, H).then(([row]) => row!),
      );
    return embedding.get(id)!;
  };

  // 3. One rank-one term per wrong token (adding exactly α·u where its key is), the value direction u; as many tokens
  //    as the embedding rows they need leave calls for the α search.
  const searchCalls = 3 * (Math.ceil(Math.log2(MAX_EXPONENT + 1)) + 1) + 2;
  const rowsNeeded = new Set<number>();
  const affordable = groups.filter((group) => {
    const more = new Set([...rowsNeeded, ...group.flatMap((m) => [m.want, m.got])]);
    if (more.size > callsLeft - searchCalls) return false;
    more.forEach((id) => rowsNeeded.add(id));
    return true;
  });
  if (affordable.length === 0)
    return { finalReply: `builtin:rank-one: ${callsLeft} tool calls left, too few to edit; no edit made.` };
  const terms: { u: Row; v: Row }[] = [];
  for (const group of affordable) {
    const key = mean(group.map((m) => targetKeys[m.sequence]![m.row]!));
    const direction = mean(
      await Promise.all(group.map(async (m) => subtract(await embedRow(m.want), await embedRow(m.got)))),
    );
    // The MLP output reaches the logits through the post-feedforward norm's (1 + w) and the final norm's (1 + w).
    const u = unit(
      direction.map((d, i) => (Math.abs(1 + postNorm[i]!) < 0.05 ? 0 : (d * (1 + finalNorm[i]!)) / (1 + postNorm[i]!))),
    );
    // ROME's choice: v ∝ (C + λI)⁻¹ k with C the second moment of the other keys, scaled so that vᵀk = 1.
    const whitened = whiten(key);
    terms.push({ u, v: whitened.map((x) => x / dot(whitened, key)) });
  }
  const edit = (alpha: number) => ({
    op: 'low_rank_add',
    tensor: names.down,
    alpha,
    u: terms[0]!.u.map((_, i) => terms.map((t) => t.u[i]!)),
    v: terms[0]!.v.map((_, j) => terms.map((t) => t.v[j]!)),
  });

  // 4. The smallest α = 2^e that gives the practice targets (a binary search over e), checked on every example.
  const all = [...targets, ...keeps];
  const maxNewTokens = Math.min(256, 32 + Math.max(...all.map((e) => e.response.length)));
  const trials = new Map<number, { targets: number; keeps: number }>();
  const trial = async (exponent: number) => {
    await editor.turn();
    await editor.tool('write_weights', { op: 'revert', to_op_count: 0 });
    await editor.tool('write_weights', edit(2 ** exponent));
    const run = (
      await editor.tool('run_target', {
        sequences: all.map((e) => ({ messages: e.messages })),
        max_new_tokens: maxNewTokens,
      })
    ).result as { outputs: { text: string }[] };
    const matches = run.outputs.map((o, i) => o.text.trim() === all[i]!.response.trim());
    const result = {
      targets: matches.slice(0, targets.length).filter(Boolean).length,
      keeps: matches.slice(targets.length).filter(Boolean).length,
    };
    trials.set(exponent, result);
    return result.targets >= Math.ceil(SUCCESS_SHARE * targets.length);
  };
  let [low, high] = [0, MAX_EXPONENT];
  let last = -1;
  while (low < high) {
    const middle = (low + high) >> 1;
    last = middle;
    if (await trial(middle)) high = middle;
    else low = middle + 1;
  }
  if (!trials.has(low)) await trial((last = low));
  // No α good enough: the one that did best (ties to the smaller).
  const best = [...trials].sort(([ea, a], [eb, b]) => b.targets + b.keeps - (a.targets + a.keeps) || ea - eb)[0]![0];
  const chosenExponent = trials.get(low)!.targets >= Math.ceil(SUCCESS_SHARE * targets.length) ? low : best;
  if (last !== chosenExponent) {
    await editor.tool('write_weights', { op: 'revert', to_op_count: 0 });
    await editor.tool('write_weights', edit(2 ** chosenExponent));
  }
  const chosen = trials.get(chosenExponent)!;
  return {
    finalReply:
      `builtin:rank-one: ${terms.length} rank-one term(s) added to ${names.down} at α = ${2 ** chosenExponent}; practice: ` +
      `${chosen.targets}/${targets.length} requested responses, ${chosen.keeps}/${keeps.length} kept answers unchanged ` +
      `(α tried: ${[...trials.keys()]
        .sort((a, b) => a - b)
        .map((e) => 2 ** e)
        .join(', ')}).`,
  };
};

/** act = gelu_tanh(G·x) ⊙ (U·x), x = h / rms(h) · (1 + w): the down-projection's input at one position. */
export function mlpKey(h: Row, normWeight: Row, gate: Row[], up: Row[]): Row {
  const rms = Math.sqrt(h.reduce((s, x) => s + x * x, 0) / h.length + 1e-6);
  const x = h.map((v, i) => (v / rms) * (1 + normWeight[i]!));
  const gelu = (z: number) => 0.5 * z * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (z + 0.044715 * z ** 3)));
  return gate.map((g, j) => gelu(dot(g, x)) * dot(up[j]!, x));
}

async function readSlice(editor: EpisodeHandle, args: Record<string, unknown>): Promise<unknown> {
  const result = (await editor.tool('read_weights', { op: 'slice', ...args })).result as { values?: unknown };
  if (result.values === undefined) throw new Error('builtin:rank-one: a read came back as a handle, not values');
  return result.values;
}

/** Rows [from, to) of a matrix (a tensor or an array handle), as many per read as come back inline. */
async function readRows(
  editor: EpisodeHandle,
  source: { tensor: string } | { handle: string },
  from: number,
  to: number,
  columns: number,
): Promise<Row[]> {
  const step = Math.max(1, Math.floor(INLINE_VALUES / columns));
  const out: Row[] = [];
  for (let r = from; r < to; r += step)
    out.push(...((await readSlice(editor, { ...source, slice: [[r, Math.min(to, r + step)], null] })) as Row[]));
  return out;
}

/**
 * x ↦ (C + λI)⁻¹ x, with C = the mean of k kᵀ over `keys` and λ a small share of its trace: directions the other
 * keys use are damped, so an edit keyed on x reaches them less (Cholesky factorisation, solved per call).
 */
export function ridgeSolver(keys: Row[], share = RIDGE_SHARE): (x: Row) => Row {
  if (keys.length === 0) return (x) => [...x]; // nothing to steer clear of
  const n = keys[0]!.length;
  const C = Array.from({ length: n }, () => new Float64Array(n));
  for (const k of keys)
    for (let i = 0; i < n; i++) for (let j = 0; j <= i; j++) C[i]![j]! += (k[i]! * k[j]!) / keys.length;
  let trace = 0;
  for (let i = 0; i < n; i++) trace += C[i]![i]!;
  const lambda = Math.max(share * (trace / Math.max(1, n)), 1e-9);
  // Cholesky: C + λI = L Lᵀ (lower triangle).
  const L = Array.from({ length: n }, () => new Float64Array(n));
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let sum = C[i]![j]! + (i === j ? lambda : 0);
      for (let k = 0; k < j; k++) sum -= L[i]![k]! * L[j]![k]!;
      L[i]![j] = i === j ? Math.sqrt(sum) : sum / L[j]![j]!;
    }
  }
  return (x) => {
    const y = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      let sum = x[i]!;
      for (let k = 0; k < i; k++) sum -= L[i]![k]! * y[k]!;
      y[i] = sum / L[i]![i]!;
    }
    const z = new Float64Array(n);
    for (let i = n - 1; i >= 0; i--) {
      let sum = y[i]!;
      for (let k = i + 1; k < n; k++) sum -= L[k]![i]! * z[k]!;
      z[i] = sum / L[i]![i]!;
    }
    return [...z];
  };
}

const dot = (a: Row, b: Row) => a.reduce((s, x, i) => s + x * b[i]!, 0);
const subtract = (a: Row, b: Row) => a.map((x, i) => x - b[i]!);
const mean = (rows: Row[]) => rows[0]!.map((_, i) => rows.reduce((s, r) => s + r[i]!, 0) / rows.length);
const unit = (a: Row) => {
  const n = Math.sqrt(dot(a, a));
  return a.map((x) => x / n);
};
