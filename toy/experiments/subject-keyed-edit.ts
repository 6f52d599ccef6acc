// Why builtin:rank-one keys on the answer positions, measured: the edit the textbook describes (ROME's key at the
// subject's last token, in the MLP of layer l) with a value chosen without gradients (the unembedding direction
// E[new answer's first token] − E[old answer's first token], through the post-feedforward norm) on the toy target.
// For every layer and α = 4^0 … 4^6 it prints the share of target and preservation items answered as requested
// (greedy with the items' token cap, the family's own checks; in process, with the engine `evaluate-patch` uses).
//
//   npx tsx toy/experiments/subject-keyed-edit.ts [--seed 0]    # a local-factual-update seed; ~10 s here
import { parseArgs } from 'node:util';
import {
  bf16ToF32,
  Checkpoint,
  checkpointSource,
  f32ToBf16,
  Gemma3Engine,
  MAX_BATCH,
  overlaySource,
  Tokenizer,
  type WeightSource,
} from '../../engine/index.ts';
import { passes, runCheck } from '../../taskset/checks/index.ts';
import { episodeSpec } from '../../taskset/episode.ts';
import { mlpKey } from '../../taskset/harness/builtin-rank-one.ts';
import type { Item } from '../../taskset/types.ts';
import { TOY_TARGET_DIR } from '../target.ts';

const { values } = parseArgs({ options: { seed: { type: 'string', default: '0' } } });
const tokenizer = await Tokenizer.load(TOY_TARGET_DIR);
const checkpoint = Checkpoint.open(TOY_TARGET_DIR);
const pristine = checkpointSource(checkpoint);
const engine = await Gemma3Engine.create({ checkpoint, source: pristine });
const spec = episodeSpec('local_factual_update', Number(values.seed), { tokenizer });
const change = spec.objective.structured as { subject: string; old: string; new: string };
const { hidden_size: H, intermediate_size: I, num_hidden_layers: layers } = checkpoint.config;

/** Pristine weights with one tensor replaced by `values`, rounded to BF16 as the weight store rounds an edit. */
const withTensor = (name: string, values: Float32Array): WeightSource =>
  overlaySource(pristine, new Map([[name, f32ToBf16(values)]]));
const valuesOf = (name: string) => bf16ToF32(pristine.bf16(name));
const matrix = (name: string, rows: number, columns: number) => {
  const values = valuesOf(name);
  return Array.from({ length: rows }, (_, r) => [...values.subarray(r * columns, (r + 1) * columns)]);
};
// The prompts name the subject as "Belgium", "Belgium's" or "Belgian": its stem's last token is the subject's
// (-1 where a prompt names it otherwise, "the US president").
const subjectPosition = (ids: number[]) =>
  ids.findIndex((_, t) => tokenizer.decode(ids.slice(0, t + 1)).includes(change.subject.slice(0, 5)));

async function shareAnswered(items: Item[], weights?: WeightSource): Promise<number> {
  let passed = 0;
  for (let i = 0; i < items.length; i += MAX_BATCH) {
    const batch = items.slice(i, i + MAX_BATCH);
    const maxNewTokens = Math.max(...batch.map((item) => item.maxNewTokens)); // one cap for every item of this family
    const outputs = await engine.generate(
      batch.map((item) => tokenizer.chatIds(item.messages)),
      { maxNewTokens, weights },
    );
    outputs.forEach((o, j) => (passed += Number(passes(runCheck(batch[j]!.check, tokenizer.decode(o.outputIds))))));
  }
  return passed / items.length;
}
const score = async (weights?: WeightSource) => ({
  target: await shareAnswered(spec.terminal.target, weights),
  preservation: await shareAnswered(spec.terminal.preservation, weights),
});

const [newFirst, oldFirst] = [change.new, change.old].map((name) => tokenizer.encodeRaw(name)[0]!);
const embedding = valuesOf('model.embed_tokens.weight');
const rows: Record<string, unknown>[] = [{ layer: null, alpha: 0, ...(await score()) }];
for (let layer = 0; layer < layers; layer++) {
  const prefix = `model.layers.${layer}`;
  const down = `${prefix}.mlp.down_proj.weight`;
  // The key: the down-projection's input at the subject's last token, averaged over the practice prompts. The residual
  // stream before the MLP is the layer's output with the down-projection zeroed.
  const probe = withTensor(down, new Float32Array(H * I));
  const [normWeight, gate, up] = [
    [...valuesOf(`${prefix}.pre_feedforward_layernorm.weight`)],
    matrix(`${prefix}.mlp.gate_proj.weight`, I, H),
    matrix(`${prefix}.mlp.up_proj.weight`, I, H),
  ];
  const keys: number[][] = [];
  for (const example of spec.practice.filter((p) => p.note === 'the requested behaviour')) {
    const ids = tokenizer.chatIds(example.messages);
    const at = subjectPosition(ids);
    if (at < 0 || keys.length === 4) continue;
    const [inspected] = await engine.inspect([{ ids, start: at, end: at + 1 }], {
      layers: [layer],
      topK: 1,
      weights: probe,
    });
    keys.push(mlpKey([...inspected!.hidden[layer]![0]!], normWeight, gate, up));
  }
  if (keys.length === 0) throw new Error(`no practice prompt names "${change.subject}"`);
  const key = keys[0]!.map((_, j) => keys.reduce((sum, k) => sum + k[j]!, 0) / keys.length);
  const keyNorm2 = key.reduce((sum, x) => sum + x * x, 0);
  const postNorm = valuesOf(`${prefix}.post_feedforward_layernorm.weight`);
  const direction = Array.from(
    { length: H },
    (_, i) => (embedding[newFirst * H + i]! - embedding[oldFirst * H + i]!) / (1 + postNorm[i]!),
  );
  const length = Math.hypot(...direction);
  for (let exponent = 0; exponent <= 12; exponent += 2) {
    const alpha = 2 ** exponent;
    const edited = valuesOf(down); // W_down += α · u kᵀ / |k|², adding α·u where the key is
    for (let i = 0; i < H; i++)
      for (let j = 0; j < I; j++) edited[i * I + j]! += (alpha * (direction[i]! / length) * key[j]!) / keyNorm2;
    rows.push({ layer, alpha, ...(await score(withTensor(down, edited))) });
  }
}
console.log(
  JSON.stringify(
    { experiment: 'subject-keyed-edit', episode: { family: spec.family, seed: spec.seed }, change, rows },
    null,
    1,
  ),
);
