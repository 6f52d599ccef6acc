// The editor brief: objective, a compact tensor manifest, relevant token ids, practice examples, budgets, limits and
// the tool definitions. Nothing of the terminal grading inputs reaches this far (the service never receives them).
import type { Manifest, ManifestRow } from './weights/index.ts';
import { LIMITS, type EpisodeBrief } from './api/index.ts';
import type { EpisodeSession } from './episodes.ts';
import type { Target } from './target.ts';
import { TOOL_DEFINITIONS } from './tools/schemas.ts';

/**
 * One line per tensor pattern: per-layer tensors folded into `layers.{a..b}`, e.g.
 * `model.layers.{0..25}.mlp.down_proj.weight [1152, 6912] BF16 writable`; fixed (vision) tensors counted, not listed.
 */
export function compactManifest(manifest: Manifest): string[] {
  const groups = new Map<string, { rows: ManifestRow[]; layers: number[] }>();
  let fixed = 0;
  let fixedParams = 0;
  for (const row of manifest.rows) {
    if (!row.writable && row.kind === 'vision') {
      fixed++;
      fixedParams += row.numel;
      continue;
    }
    const key = `${row.name.replace(/\.layers\.\d+\./, '.layers.{i}.')} ${JSON.stringify(row.shape)} ${row.dtype} ${row.writable ? 'writable' : 'fixed'}`;
    const group = groups.get(key) ?? { rows: [], layers: [] };
    group.rows.push(row);
    if (row.layer !== null) group.layers.push(row.layer);
    groups.set(key, group);
  }
  const lines = [...groups.entries()].map(([key, group]) => {
    const [pattern, ...rest] = key.split(' ');
    const layers = group.layers.length > 0 ? `{${Math.min(...group.layers)}..${Math.max(...group.layers)}}` : '';
    const name = layers ? pattern!.replace('{i}', layers) : pattern!;
    const aliases = group.rows[0]!.aliases.length > 0 ? ` (alias: ${group.rows[0]!.aliases.join(', ')})` : '';
    return `${name} ${rest.join(' ')}${aliases}`;
  });
  if (fixed > 0)
    lines.push(
      `vision_tower.* and multi_modal_projector.*: ${fixed} tensors, ${fixedParams} parameters, fixed (read-only)`,
    );
  return lines;
}

export function editorBrief(target: Target, episode: EpisodeSession): EpisodeBrief {
  const { spec } = episode;
  const config = target.checkpoint.config;
  return {
    episode_id: episode.id,
    family: spec.family,
    seed: spec.seed,
    objective: spec.objective,
    target: {
      model: target.modelId,
      revision: target.checkpoint.revision,
      layers: config.num_hidden_layers,
      hidden_size: config.hidden_size,
      layer_types: [...config.layer_types],
      chat_template: 'Gemma 3: <start_of_turn>user\\n…<end_of_turn>\\n<start_of_turn>model\\n',
    },
    manifest: compactManifest(target.store.manifest),
    relevant_tokens: spec.relevant_token_ids.map((id) => ({ id, token: target.tokenizer.idToToken(id) ?? null })),
    practice: spec.practice,
    budget: episode.ledger.state(),
    limits: LIMITS,
    tools: [...TOOL_DEFINITIONS],
  };
}
