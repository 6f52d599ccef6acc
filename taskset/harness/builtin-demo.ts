// builtin:demo — a scripted editor that uses all four tools once, for `npx iwibench demo` and smoke runs:
// it runs the target on the first practice example, inspects the practice answer's first token, reads the
// embedding summary, and makes one rank-one edit that raises that token's logit in that context
// (E[t] += α · h / ‖h‖, where h is the final residual stream at the predicting position). A nudge, not a method:
// it shows the pipeline, not an editor's skill.
import type { BuiltinEditor } from './builtin.ts';

type InspectResult = {
  sequences: {
    positions: { position: number; next: { id: number } | null }[];
    hidden: Record<string, { id: string; shape: number[] }>;
  }[];
};
type SliceResult = { values?: number[][] };

const ALPHA = 2;

export const demo: BuiltinEditor = async ({ editor, brief }) => {
  const example = brief.practice[0];
  if (!example) {
    await editor.turn();
    return { finalReply: 'builtin:demo: no practice example to work from; no edit made.' };
  }
  await editor.turn();
  await editor.tool('run_target', { sequences: [{ messages: example.messages }], max_new_tokens: 16 });

  await editor.turn();
  const last = brief.target.layers - 1;
  const inspected = (
    await editor.tool('inspect_target', {
      sequences: [{ messages: example.messages, continuation: example.response }],
      layers: [last],
      top_k: 3,
    })
  ).result as InspectResult;
  const first = inspected.sequences[0]!.positions[0]!;
  const token = first.next?.id;
  const handle = inspected.sequences[0]!.hidden[String(last)]!;

  await editor.turn();
  const embed = brief.manifest.find((line) => line.includes('embed_tokens.weight'))!.split(' ')[0]!;
  await editor.tool('read_weights', { op: 'summary', tensor: embed });
  const row = (await editor.tool('read_weights', { op: 'slice', handle: handle.id, slice: [[0, 1], null] }))
    .result as SliceResult;
  if (token === undefined || !row.values) {
    return { finalReply: 'builtin:demo: the residual stream is too wide to read inline here; no edit made.' };
  }
  const h = row.values[0]!;
  const norm = Math.hypot(...h);

  await editor.turn();
  await editor.tool('write_weights', {
    op: 'low_rank_add',
    tensor: embed,
    slice: [[token, token + 1], null],
    alpha: ALPHA,
    u: [[1]],
    v: h.map((x) => [x / norm]),
  });
  await editor.tool('run_target', {
    sequences: [{ messages: example.messages }],
    max_new_tokens: 16,
    compare_base: true,
  });
  return {
    finalReply: `builtin:demo: raised token ${token}'s embedding along the final residual stream (α = ${ALPHA}).`,
  };
};
